"""Write specs-zh: four product spec sheets and the questions asked of them (see README.md). Same bytes every run."""
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent

TABLES = {
    "vacuum": ("云净扫地机器人 S 系列参数表", ["型号", "续航时间", "吸力", "尘盒容量", "水箱容量", "运行噪音", "整机重量", "售价"], [
        ["S10", "120分钟", "2700Pa", "450毫升", "200毫升", "58分贝", "3.2千克", "1499元"],
        ["S20", "150分钟", "4000Pa", "500毫升", "250毫升", "55分贝", "3.5千克", "2299元"],
        ["S30", "180分钟", "6000Pa", "400毫升", "300毫升", "52分贝", "3.8千克", "3199元"]]),
    "laptop": ("星舟笔记本电脑参数表", ["型号", "屏幕尺寸", "处理器", "内存", "电池容量", "续航", "重量", "售价"], [
        ["Air13", "13.3英寸", "八核 X5", "16GB", "56瓦时", "14小时", "1.18千克", "5999元"],
        ["Pro15", "15.6英寸", "十二核 X7", "32GB", "72瓦时", "11小时", "1.65千克", "8999元"],
        ["Max17", "17.3英寸", "十六核 X9", "64GB", "99瓦时", "8小时", "2.4千克", "13999元"]]),
    "purifier": ("清源反渗透净水器参数表", ["型号", "额定净水流量", "滤芯更换周期", "净废水比", "额定功率", "机身尺寸", "售价"], [
        ["RO-400", "1.05升/分钟", "12个月", "2:1", "36瓦", "420×150×380毫米", "1999元"],
        ["RO-600", "1.58升/分钟", "18个月", "3:1", "48瓦", "450×160×400毫米", "2799元"],
        ["RO-800", "2.1升/分钟", "24个月", "3.5:1", "60瓦", "480×170×420毫米", "3699元"]]),
    "cnc": ("精工数控立式加工中心技术参数", ["型号", "主轴最高转速", "主电机功率", "工作台尺寸", "定位精度", "机床重量"], [
        ["XK-300", "10000转/分", "3.7千瓦", "800×300毫米", "0.008毫米", "2.1吨"],
        ["XK-500", "8000转/分", "5.5千瓦", "1000×500毫米", "0.010毫米", "3.6吨"],
        ["XK-800", "6000转/分", "11千瓦", "1300×800毫米", "0.012毫米", "6.8吨"]]),
}
PROSE = [
    ("vacuum-care", "云净扫地机器人 保养与保修", "云净 S 系列扫地机器人整机保修一年，电池保修六个月。主刷建议每六个月更换一次，边刷每三个月更换一次。"
     "尘盒滤网每两周清洗一次，清洗后须完全晾干再装回。"),
    ("laptop-service", "星舟笔记本电脑 服务说明", "星舟笔记本电脑享受两年整机保修，购买后十五天内可无理由退货。电池在保修期内容量低于百分之八十可免费更换。"
     "预装系统激活后不支持退货，但仍可换货。"),
    ("purifier-install", "清源净水器 安装说明", "清源净水器需安装在零度以上的室内，进水压力应在0.1至0.4兆帕之间。安装服务免费，由厂家工程师上门完成。"
     "首次使用前须冲洗滤芯五分钟，冲洗出的水不可饮用。"),
    ("cnc-power", "精工数控加工中心 电源与环境要求", "精工数控加工中心需接入380伏三相电源，电压波动不超过正负百分之十，接地电阻不大于4欧姆。"
     "车间环境温度应在5至40摄氏度之间，相对湿度不超过百分之八十。"),
]


def table_passage(key):
    title, header, rows = TABLES[key]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + ["| " + " | ".join(r) + " |" for r in rows]
    return {"id": key, "title": title, "text": f"## {title}\n" + "\n".join(lines)}


def value(key, model, column):
    title, header, rows = TABLES[key]
    return next(r for r in rows if r[0] == model)[header.index(column)]


# (previous, follow-up, family, model the follow-up asks of, column)
FOLLOWUPS = [
    ("S10 的续航时间是多少？", "那 S20 呢？", "vacuum", "S20", "续航时间"),
    ("S10 的续航时间是多少？", "S30 呢？", "vacuum", "S30", "续航时间"),
    ("S20 的吸力是多少？", "那 S30 呢？", "vacuum", "S30", "吸力"),
    ("S20 多少钱？", "它重多少？", "vacuum", "S20", "整机重量"),
    ("S30 的运行噪音有多大？", "S10 的呢？", "vacuum", "S10", "运行噪音"),
    ("S10 的尘盒容量是多少？", "那水箱呢？", "vacuum", "S10", "水箱容量"),
    ("S20 的续航时间是多少？", "它多少钱？", "vacuum", "S20", "售价"),
    ("S30 的售价是多少？", "那 S10 呢？", "vacuum", "S10", "售价"),
    ("S10 的整机重量是多少？", "S30 呢？", "vacuum", "S30", "整机重量"),
    ("S20 的水箱容量是多少？", "那 S10 呢？", "vacuum", "S10", "水箱容量"),
    ("S30 的吸力是多少？", "它的续航时间呢？", "vacuum", "S30", "续航时间"),
    ("Air13 的售价是多少？", "它重多少？", "laptop", "Air13", "重量"),
    ("Air13 的售价是多少？", "那 Pro15 呢？", "laptop", "Pro15", "售价"),
    ("Pro15 的续航是多久？", "Max17 呢？", "laptop", "Max17", "续航"),
    ("Max17 的屏幕尺寸是多少？", "那 Air13 呢？", "laptop", "Air13", "屏幕尺寸"),
    ("Air13 的内存是多大？", "Pro15 的呢？", "laptop", "Pro15", "内存"),
    ("Pro15 用的是什么处理器？", "那 Max17 呢？", "laptop", "Max17", "处理器"),
    ("Max17 的电池容量是多少？", "它的续航呢？", "laptop", "Max17", "续航"),
    ("Pro15 的重量是多少？", "Air13 呢？", "laptop", "Air13", "重量"),
    ("Air13 的电池容量是多少？", "那 Max17 呢？", "laptop", "Max17", "电池容量"),
    ("Pro15 多少钱？", "它的屏幕多大？", "laptop", "Pro15", "屏幕尺寸"),
    ("Max17 的售价是多少？", "Pro15 呢？", "laptop", "Pro15", "售价"),
    ("RO-400 的滤芯多久换一次？", "那 800 呢？", "purifier", "RO-800", "滤芯更换周期"),
    ("RO-400 的滤芯多久换一次？", "RO-600 呢？", "purifier", "RO-600", "滤芯更换周期"),
    ("RO-600 的额定净水流量是多少？", "那 RO-800 呢？", "purifier", "RO-800", "额定净水流量"),
    ("RO-800 的售价是多少？", "那 400 呢？", "purifier", "RO-400", "售价"),
    ("RO-400 的净废水比是多少？", "RO-800 的呢？", "purifier", "RO-800", "净废水比"),
    ("RO-600 多少钱？", "它的功率是多少？", "purifier", "RO-600", "额定功率"),
    ("RO-800 的额定功率是多少？", "那 RO-400 呢？", "purifier", "RO-400", "额定功率"),
    ("RO-400 的机身尺寸是多少？", "600 呢？", "purifier", "RO-600", "机身尺寸"),
    ("RO-600 的滤芯更换周期是多久？", "它多少钱？", "purifier", "RO-600", "售价"),
    ("RO-800 的额定净水流量是多少？", "RO-400 呢？", "purifier", "RO-400", "额定净水流量"),
    ("XK-500 的主轴最高转速是多少？", "那 XK-800 呢？", "cnc", "XK-800", "主轴最高转速"),
    ("XK-500 的主轴最高转速是多少？", "XK-300 呢？", "cnc", "XK-300", "主轴最高转速"),
    ("XK-300 的主电机功率是多少？", "那 XK-500 呢？", "cnc", "XK-500", "主电机功率"),
    ("XK-800 的工作台尺寸是多少？", "XK-300 的呢？", "cnc", "XK-300", "工作台尺寸"),
    ("XK-500 的定位精度是多少？", "那 800 呢？", "cnc", "XK-800", "定位精度"),
    ("XK-300 的机床重量是多少？", "XK-800 呢？", "cnc", "XK-800", "机床重量"),
    ("XK-800 的主电机功率是多少？", "它的主轴最高转速呢？", "cnc", "XK-800", "主轴最高转速"),
    ("XK-500 的机床重量是多少？", "那 XK-300 呢？", "cnc", "XK-300", "机床重量"),
    ("XK-300 的定位精度是多少？", "那 XK-500 呢？", "cnc", "XK-500", "定位精度"),
    ("XK-800 的定位精度是多少？", "它重多少？", "cnc", "XK-800", "机床重量"),
    ("What is the battery life of the S10?", "What about the S20?", "vacuum", "S20", "续航时间"),
    ("How much does the Air13 cost?", "what about Max17?", "laptop", "Max17", "售价"),
    ("What is the filter replacement cycle of the RO-400?", "And RO-600?", "purifier", "RO-600", "滤芯更换周期"),
    ("What is the maximum spindle speed of the XK-500?", "what about XK-800?", "cnc", "XK-800", "主轴最高转速"),
]
# (question, English twin, family, model, column)
QUESTIONS = [
    ("S20 的续航时间是多少？", "What is the battery life of the S20 robot vacuum?", "vacuum", "S20", "续航时间"),
    ("S30 的吸力是多少？", "How strong is the suction of the S30?", "vacuum", "S30", "吸力"),
    ("S10 多少钱？", "How much does the S10 cost?", "vacuum", "S10", "售价"),
    ("S20 的整机重量是多少？", "How heavy is the S20?", "vacuum", "S20", "整机重量"),
    ("S30 的运行噪音是多少分贝？", "How loud is the S30 when running?", "vacuum", "S30", "运行噪音"),
    ("Air13 的售价是多少？", "What is the price of the Air13 laptop?", "laptop", "Air13", "售价"),
    ("Pro15 的重量是多少？", "How much does the Pro15 weigh?", "laptop", "Pro15", "重量"),
    ("Max17 的续航是多久？", "What is the battery life of the Max17?", "laptop", "Max17", "续航"),
    ("Pro15 的内存是多大？", "How much memory does the Pro15 have?", "laptop", "Pro15", "内存"),
    ("Air13 的屏幕尺寸是多少？", "What is the screen size of the Air13?", "laptop", "Air13", "屏幕尺寸"),
    ("RO-400 的滤芯多久换一次？", "How often should the RO-400 filter be replaced?", "purifier", "RO-400", "滤芯更换周期"),
    ("RO-800 的额定净水流量是多少？", "What is the rated flow of purified water of the RO-800?", "purifier", "RO-800", "额定净水流量"),
    ("RO-600 的售价是多少？", "How much is the RO-600 water purifier?", "purifier", "RO-600", "售价"),
    ("RO-800 的额定功率是多少？", "What is the rated power of the RO-800?", "purifier", "RO-800", "额定功率"),
    ("XK-500 的主轴最高转速是多少？", "What is the maximum spindle speed of the XK-500?", "cnc", "XK-500", "主轴最高转速"),
    ("XK-300 的主电机功率是多少？", "XK-300 main motor power", "cnc", "XK-300", "主电机功率"),
    ("XK-800 的机床重量是多少？", "How heavy is the XK-800 machine?", "cnc", "XK-800", "机床重量"),
    ("XK-500 的定位精度是多少？", "What is the positioning accuracy of the XK-500?", "cnc", "XK-500", "定位精度"),
]
PROSE_QUESTIONS = [
    ("扫地机器人的边刷多久换一次？", "How often should the side brush of the robot vacuum be replaced?", "vacuum-care", "每三个月"),
    ("笔记本电脑保修几年？", "How long is the laptop warranty?", "laptop-service", "两年整机保修"),
    ("净水器安装要收费吗？", "Is installation of the water purifier free?", "purifier-install", "安装服务免费"),
    ("加工中心需要什么电源？", "What power supply does the machining center need?", "cnc-power", "380伏三相电源"),
    ("净水器首次使用前要冲洗多久？", "How long should the purifier filter be flushed before first use?", "purifier-install", "五分钟"),
    ("笔记本电脑买了多少天内可以无理由退货？", "Within how many days can the laptop be returned without reason?", "laptop-service", "十五天"),
]
# On-topic questions the sheets do not answer.
UNANSWERABLE = [
    "S20 支持拖地自动抬升吗？", "Air13 有几个 USB 接口？", "RO-600 的出水温度可以调节吗？", "XK-500 的刀库容量是多少？",
    "S30 的充电时间要多久？", "Pro15 的屏幕刷新率是多少？", "RO-800 支持手机 App 控制吗？", "XK-300 的数控系统是什么品牌？",
    "扫地机器人可以设置禁区吗？", "笔记本电脑的键盘有背光吗？",
]


def main():
    corpus = [table_passage(k) for k in TABLES] + [{"id": i, "title": t, "text": x} for i, t, x in PROSE]
    with (HERE / "corpus.jsonl").open("w", encoding="utf-8") as f:
        for p in corpus:
            f.write(json.dumps(p, ensure_ascii=False) + "\n")
    with (HERE / "followups.jsonl").open("w", encoding="utf-8") as f:
        for i, (prev, fu, fam, model, col) in enumerate(FOLLOWUPS, 1):
            f.write(json.dumps({"id": f"spec-fu-{i}", "previous": prev, "followup": fu, "relevant": [fam],
                                "answer": value(fam, model, col)}, ensure_ascii=False) + "\n")
    with (HERE / "queries.jsonl").open("w", encoding="utf-8") as f:
        n = 0
        for zh, en, fam, model, col in QUESTIONS:
            n += 1
            a = value(fam, model, col)
            f.write(json.dumps({"id": f"spec-q{n:03d}", "text": zh, "relevant": [fam], "answers": [a]}, ensure_ascii=False) + "\n")
            f.write(json.dumps({"id": f"spec-q{n:03d}-en", "text": en, "relevant": [fam], "answers": [a], "twin": f"spec-q{n:03d}"},
                               ensure_ascii=False) + "\n")
        for zh, en, pid, a in PROSE_QUESTIONS:
            n += 1
            f.write(json.dumps({"id": f"spec-q{n:03d}", "text": zh, "relevant": [pid], "answers": [a]}, ensure_ascii=False) + "\n")
            f.write(json.dumps({"id": f"spec-q{n:03d}-en", "text": en, "relevant": [pid], "answers": [a], "twin": f"spec-q{n:03d}"},
                               ensure_ascii=False) + "\n")
        for q in UNANSWERABLE:
            n += 1
            f.write(json.dumps({"id": f"spec-q{n:03d}", "text": q, "relevant": [], "answers": []}, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
