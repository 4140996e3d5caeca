"""Generate the held-out e-bike KB: six files a new user would upload, made from the text in this script.

    .venv/bin/python devdata/heldout/ebike-kb/make_files.py OUT     # writes the six files into OUT
    .venv/bin/python devdata/heldout/ebike-kb/make_files.py --check # answer spans of queries.jsonl vs. the text here

The brand (骁途), its company, models (E5, E7), prices, dates, phone number and policies are fictional;
the text was written for zhiku (licence: the project's). The output is byte-for-byte the same on every run
(fixed document dates, fixed ZIP timestamps, reportlab's invariant mode), so ``--files OUT`` of
``kb_eval`` / ``chat_eval`` skips files a KB already holds.

Files:
- ``manual.docx``: user manual, Word headings, a parameter table (参数 | E5 | E7) and a trouble-shooting table.
- ``warranty.pdf``: warranty terms with a text layer, a warranty table (部件 | 保修期 | 说明) and prose terms.
- ``pricelist.pdf``: a scanned price list: the page rendered to an image with the CJK font, no text layer
  (ingestion must OCR it).
- ``faq.xlsx``: FAQ sheet, columns 问题 / 答案.
- ``launch.pptx``: launch slides (title slide, bullets, speaker notes, two tables).
- ``policy.txt``: after-sales and returns policy, GBK with CRLF line ends, numbered 第一章 / 第三条 / 一、.
"""
from __future__ import annotations

import io
import json
import re
import sys
import time
import zipfile
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.docgen import cjk_font_path, policy_pdf, render_pages  # noqa: E402

FIXED = datetime(2024, 9, 20, 9, 0, 0)
BRAND = "骁途"

# --- manual.docx ------------------------------------------------------------------------------

MANUAL_TITLE = "骁途E5/E7电动自行车用户手册"
PARAMETERS = [
    ["参数", "E5", "E7"],
    ["续航里程", "约60公里", "约90公里"],
    ["充电时间", "6至8小时", "6至8小时"],
    ["电池", "锂电池 48V 12Ah", "锂电池 48V 20Ah"],
    ["电机功率", "350W", "400W"],
    ["最高时速", "25公里/小时", "25公里/小时"],
    ["整车重量", "24千克", "27千克"],
    ["最大载重", "120千克", "150千克"],
    ["轮胎规格", "14×2.5英寸", "16×3.0英寸真空胎"],
    ["制动方式", "前后碟刹", "前后碟刹"],
    ["防水等级", "IPX4", "IPX5"],
]
TROUBLES = [
    ["故障现象", "可能原因", "处理方法"],
    ["仪表不亮", "电池未装好或电量耗尽", "重新安装电池并充电"],
    ["车辆没有助力", "刹车断电开关未复位", "松开刹车把后重新开机"],
    ["充电器指示灯不亮", "电源插座无电或插头松动", "更换插座后重新插好插头"],
    ["续航明显缩短", "电池老化或气温过低", "到门店检测电池容量"],
]
MANUAL = [
    ("h", 1, "一、产品简介"),
    ("p", "感谢您选择骁途电动自行车。E5是面向城市通勤的轻便车型，E7是长续航的升级车型，两款车均符合"
          "《电动自行车安全技术规范》（GB 17761-2018）。"),
    ("p", "本手册介绍车辆的技术参数、充电方法、骑行前检查和日常保养。使用前请仔细阅读，并妥善保管本手册。"),
    ("h", 1, "二、技术参数"),
    ("p", "下表列出E5和E7的主要技术参数。"),
    ("t", PARAMETERS),
    ("p", "续航里程在25℃、载重75千克、平坦路面匀速骑行的条件下测得，实际续航会因路况、载重、气温和骑行习惯而不同。"
          "冬季气温低于0℃时，续航可能下降20%至30%。"),
    ("h", 1, "三、充电与电池"),
    ("h", 2, "（一）充电方法"),
    ("p", "请使用随车附带的原装充电器充电。先将充电器插头插入车辆充电口，再接通家用220V电源；"
          "充电器指示灯由红色变为绿色即表示充满。"),
    ("p", "为延长电池寿命，请在电量低于20%时及时充电，不要长时间连续充电超过12小时。"),
    ("p", "电池可以拆下充电：关闭电源后，用钥匙逆时针旋转电池锁，握住提手向上取出电池。"),
    ("h", 2, "（二）电池保养"),
    ("p", "长期不骑行时，应将电池充至50%左右，存放在阴凉干燥处，并每月补充一次电。"),
    ("p", "请勿在0℃以下或45℃以上的环境中充电；严禁拆解、撞击电池，或将电池靠近火源。"),
    ("p", "在室内充电时，请远离易燃物品，不要在楼道、走廊或卧室内充电。"),
    ("h", 1, "四、骑行前检查"),
    ("p", "每次骑行前，请检查轮胎气压、刹车是否灵敏、灯光和喇叭是否正常。"),
    ("p", "建议轮胎气压：E5为2.5个大气压，E7为2.8个大气压。"),
    ("p", "新车骑行满300公里后，请到门店做一次免费首保检查，调整刹车并紧固螺丝。"),
    ("h", 1, "五、仪表与功能"),
    ("p", "长按仪表右侧电源键3秒开机，仪表显示电量、车速和本次里程。"),
    ("p", "短按模式键可以在经济、标准、运动三档助力模式之间切换，其中经济模式最省电。"),
    ("p", "E5使用机械钥匙启动；E7支持NFC卡片解锁，E7旗舰版还可以通过手机App查看车辆位置。"),
    ("h", 1, "六、日常保养"),
    ("p", "清洗车辆时请用湿布擦拭，不要用高压水枪直接冲洗电机、控制器和充电口。"),
    ("p", "链条每骑行500公里应清洁并加注一次链条油。"),
    ("p", "刹车片磨损到厚度不足1.5毫米时应及时更换。"),
    ("h", 1, "七、常见故障"),
    ("p", "车辆出现下列情况时，可以先按下表自行处理；仍不能排除的，请联系门店。"),
    ("t", TROUBLES),
]

# --- warranty.pdf -----------------------------------------------------------------------------

WARRANTY_TITLE = "骁途电动自行车保修说明"
WARRANTY_TABLE = [
    ["部件", "保修期", "说明"],
    ["锂电池", "2年", "电池容量低于标称容量的60%时免费更换"],
    ["电机", "3年", "不含因进水造成的损坏"],
    ["车架", "5年", "正常使用中出现断裂、开焊的免费更换"],
    ["控制器", "1年", "含调速转把"],
    ["充电器", "1年", "仅限原装充电器"],
    ["仪表", "1年", "屏幕划伤不在保修范围"],
    ["轮胎、刹车片、灯泡等易损件", "3个月", "正常磨损不属于质量问题"],
]
WARRANTY = [
    ("h", 1, "一、保修期限"),
    ("p", "保修期自购车发票开具之日起计算。在保修期内，车辆因产品质量问题出现故障的，由骁途授权服务网点免费维修"
          "或更换相应部件。主要部件的保修期见下表。"),
    ("t", WARRANTY_TABLE),
    ("p", "更换后的部件继承原部件剩余的保修期；保修期内更换下来的旧部件归骁途公司所有。"),
    ("h", 1, "二、保修条件"),
    ("p", "申请保修时，请出示购车发票和保修卡；发票遗失的，以骁途App中的电子购车凭证为准。"),
    ("p", "车辆须在骁途授权门店或服务网点检测，并由服务人员确认为产品质量问题。"),
    ("h", 1, "三、不属于保修范围的情况"),
    ("p", "以下情况不在免费保修范围内，但可以有偿维修：私自改装或拆解电池、控制器的；使用非原装充电器造成损坏的；"
          "车辆浸水、碰撞或人为损坏的；超出保修期限的。"),
    ("p", "车辆改装提速后，整车保修失效。"),
    ("h", 1, "四、保修办理"),
    ("p", "您可以拨打服务热线400-606-7788，或在骁途App的“服务”页面提交保修申请。城区用户可以预约上门取车，"
          "取车服务免费。"),
    ("p", "维修一般在3个工作日内完成；需要更换部件而门店无库存的，不超过15个工作日。维修期间可以申请免费借用代步车。"),
]

# --- pricelist.pdf (scanned) ------------------------------------------------------------------

PRICE_TITLE = "骁途电动自行车零售价目表"
PRICE_BIKES = [
    ["型号", "版本", "颜色", "零售价"],
    ["E5", "标准版", "曜石黑、月光白", "2999元"],
    ["E5", "城市版", "樱花粉、薄荷绿", "3199元"],
    ["E7", "标准版", "深空灰、极地白", "3999元"],
    ["E7", "旗舰版", "星河蓝", "4599元"],
]
PRICE_PARTS = [
    ["配件", "适用车型", "零售价"],
    ["原装充电器", "E5、E7", "199元"],
    ["安全头盔", "通用", "129元"],
    ["车筐", "E5", "59元"],
    ["NFC卡片", "E7", "29元"],
    ["防盗锁", "通用", "89元"],
]
PRICES = [
    ("h", 1, "一、整车"),
    ("t", PRICE_BIKES),
    ("p", "城市版在标准版基础上加装车筐和后座；E7旗舰版在标准版基础上增加手机App定位和防盗报警功能。"),
    ("h", 1, "二、配件"),
    ("t", PRICE_PARTS),
    ("p", "以上价格为全国统一零售价，含13%增值税。价格如有调整，以门店公示为准。"),
    ("p", "本价目表自2024年10月1日起执行。"),
]

# --- faq.xlsx ---------------------------------------------------------------------------------

FAQ = [
    ("雨天可以骑行吗", "可以。E5的防水等级为IPX4，E7为IPX5，可以在小雨中正常骑行；请避免涉水深度超过15厘米，"
                   "雨后请擦干充电口再充电。"),
    ("电池充不进电怎么办", "先确认插座有电、充电器指示灯亮起；如果指示灯一直是绿色但电量不增加，请把电池和充电器带到门店检测。"),
    ("可以用别的牌子的充电器吗", "不建议。请使用原装充电器，使用非原装充电器造成的损坏不在保修范围内。"),
    ("电动自行车需要上牌吗", "需要。E5和E7都已列入电动自行车产品目录，购车后请携带发票、合格证和身份证到当地车管所登记上牌。"),
    ("骑车一定要戴头盔吗", "要。按照各地规定，骑行电动自行车应当佩戴安全头盔，门店有原装头盔出售。"),
    ("多大年龄可以骑电动自行车", "骑行电动自行车须年满16周岁。"),
    ("电动自行车可以带人吗", "按各地规定执行。多数城市允许搭载一名12周岁以下的未成年人，并须加装安全座椅。"),
    ("充满一次电要多少电费", "E5充满约需0.6度电，E7约需1度电，按居民电价计算不到1元。"),
    ("冬天续航为什么变短", "低温下锂电池活性下降，气温低于0℃时续航可能下降20%至30%，属于正常现象。建议冬季在室内温暖处充电。"),
    ("电池能用几年", "正常使用下，锂电池可以循环充放电约800次，一般可以使用3至4年。"),
    ("钥匙丢了怎么办", "E5可以凭购车发票到门店配钥匙，配一把钥匙收费10元；E7可以用NFC卡片或手机App解锁。"),
    ("NFC卡片丢了怎么办", "先在骁途App中解除绑定旧卡，再到门店购买新卡重新绑定。"),
    ("怎么绑定手机App", "在应用商店下载“骁途出行”App，注册登录后扫描车架上的二维码即可绑定车辆。"),
    ("车辆可以放在室外吗", "可以短时间停放在室外，长期存放请放在阴凉干燥处，避免暴晒和雨淋。"),
    ("轮胎被扎了怎么办", "E7使用真空胎，小的扎孔可以先用补胎液应急；E5请到门店或修车点补胎。"),
    ("可以改装提速吗", "不可以。私自改装提速不符合国家标准，改装后整车保修失效。"),
    ("可以分期付款吗", "门店支持花呗和信用卡分期，3期和6期免息。"),
    ("买车送什么", "购车赠送手机支架和一年期第三者责任险。"),
    ("可以在网上买吗", "可以在骁途官方旗舰店下单，门店提供送货上门服务。"),
    ("多久保养一次", "建议每骑行3000公里或每半年到门店保养一次；新车满300公里可以做一次免费首保。"),
    ("怎么查附近的门店", "打开骁途App，在“服务”页面点击“附近门店”，即可查看门店地址和营业时间。"),
    ("刹车有异响怎么办", "多为刹车片沾水或磨损所致；异响持续时请到门店检查，刹车片厚度不足1.5毫米需要更换。"),
    ("仪表显示E03是什么意思", "E03表示电机霍尔故障，请停止骑行并联系门店检修。"),
    ("仪表显示E05是什么意思", "E05表示电池电压过低，请尽快充电。"),
    ("能爬多陡的坡", "E5可以爬12度以内的坡，E7可以爬15度以内的坡；上坡时建议使用运动模式。"),
    ("电池可以带进电梯吗", "不可以。多地规定禁止将电动自行车及其电池带入电梯和楼道等室内公共区域。"),
    ("发票怎么开", "门店购车当场开具纸质发票；线上订单可以在订单详情中申请电子发票。"),
    ("车被偷了怎么办", "请立即报警。E7旗舰版可以在骁途App中查看车辆最后的定位，协助警方查找。"),
    ("二手车还能保修吗", "保修随车转让，凭原购车发票在保修期内可以继续享受保修。"),
    ("可以加装音响吗", "不建议加装大功率电器，私自改装电路造成的故障不在保修范围内。"),
    ("电动自行车最快能骑多快", "按国家标准，电动自行车最高车速不超过25公里/小时，E5和E7的最高时速均为25公里/小时。"),
]

# --- launch.pptx ------------------------------------------------------------------------------

DECK_TITLE = "骁途E7新品发布会"
DECK_PRICES = [["版本", "颜色", "价格"], ["E7标准版", "深空灰、极地白", "3999元"], ["E7旗舰版", "星河蓝", "4599元"]]
DECK_COMPARE = [["项目", "E5", "E7"], ["续航", "约60公里", "约90公里"], ["电池", "48V 12Ah", "48V 20Ah"],
                ["轮胎", "14英寸", "16英寸真空胎"], ["价格", "2999元起", "3999元起"]]
SLIDES = [
    # (layout, title, bullet lines, table, speaker notes)
    ("title", "骁途E7 长续航智能电动自行车", ["新品发布会 · 2024年9月"], None, ""),
    ("bullets", "上市时间", ["E7于2024年10月1日起在全国门店上市",
                            "首批覆盖全国200个城市的1200家门店", "骁途官方旗舰店同步开售"], None,
     "讲解时强调：9月20日起门店已经可以预订，10月1日起提车。"),
    ("bullets", "核心亮点", ["续航约90公里，满足一周通勤", "16英寸真空胎，过坎更稳", "400W电机，起步更快",
                            "NFC卡片一碰解锁", "IPX5防水，雨天通勤更安心"], None, ""),
    ("table", "价格", ["首发优惠：10月1日至10月7日购车立减200元，并赠送安全头盔一个"], DECK_PRICES, ""),
    ("table", "E5与E7对比", [], DECK_COMPARE, "E5继续在售，适合短途通勤；E7面向长距离通勤用户。"),
    ("bullets", "以旧换新", ["任意品牌旧电动车折价最高500元", "活动时间：2024年10月1日至12月31日",
                            "旧车须能正常行驶，由门店现场评估"], None, ""),
]

# --- policy.txt (GBK) -------------------------------------------------------------------------

POLICY = """骁途电动自行车售后服务及退换货政策

第一章 总则

第一条 为保障消费者的合法权益，规范骁途电动自行车的售后服务和退换货办理，根据《中华人民共和国消费者权益保护法》等法律法规，制定本政策。

第二条 本政策适用于在骁途授权门店和骁途官方旗舰店购买的E5、E7整车及原装配件。

第二章 退换货

第三条 自签收之日起7日内，车辆未骑行、未上牌、包装及配件齐全的，可以无理由退货。

第四条 自签收之日起15日内，车辆出现产品质量问题的，消费者可以选择换货或者修理。

第五条 退换货按下列方式办理：
一、门店购车的，请携带购车发票和全部配件到原购车门店办理；
二、线上购车的，请在订单页面提交申请，审核通过后由物流上门取件；
三、因质量问题退换货的，运费由骁途承担；无理由退货的，运费由消费者承担。

第六条 退货审核通过后，货款在7个工作日内原路退回。

第七条 已上牌的车辆办理退货前，应当先到车管所注销号牌。

第三章 维修服务

第八条 骁途在全国设有服务网点；城区用户报修后，服务人员在24小时内联系并预约上门。

第九条 保修期外的维修收取配件费和工时费，工时费标准为每次50元。

第十条 旧电池可以交到任一门店回收；以旧换新购买新电池的，可以抵扣100元。

第四章 投诉与联系方式

第十一条 服务热线400-606-7788，服务时间为每天8:00至21:00。

第十二条 对服务不满意的，可以拨打服务热线投诉，我们将在3个工作日内答复。

第五章 附则

第十三条 本政策自2024年10月1日起施行，由骁途智能出行科技有限公司负责解释。
"""


# --- generators -------------------------------------------------------------------------------

def _fixed_zip(data: bytes) -> bytes:
    """The same ZIP with fixed entry times and fixed dates in docProps/core.xml: the same bytes on every run."""
    stamp = FIXED.strftime("%Y-%m-%dT%H:%M:%SZ")
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            body = src.read(info.filename)
            if info.filename == "docProps/core.xml":
                body = re.sub(rb"(<dcterms:(?:created|modified)[^>]*>)[^<]*(<)", rb"\g<1>" + stamp.encode() + rb"\g<2>", body)
            entry = zipfile.ZipInfo(info.filename, date_time=FIXED.timetuple()[:6])
            entry.compress_type = zipfile.ZIP_DEFLATED
            entry.external_attr = 0o644 << 16
            dst.writestr(entry, body)
    return out.getvalue()


def manual_docx() -> bytes:
    import docx

    document = docx.Document()
    document.core_properties.title = MANUAL_TITLE
    document.core_properties.author = BRAND
    document.core_properties.created = document.core_properties.modified = FIXED
    document.add_paragraph(MANUAL_TITLE, style="Title")
    for item in MANUAL:
        if item[0] == "h":
            document.add_heading(item[2], level=item[1])
        elif item[0] == "p":
            document.add_paragraph(item[1])
        else:
            rows = item[1]
            table = document.add_table(rows=len(rows), cols=len(rows[0]))
            table.style = "Table Grid"
            for r, row in enumerate(rows):
                for c, text in enumerate(row):
                    table.cell(r, c).text = text
    buffer = io.BytesIO()
    document.save(buffer)
    return _fixed_zip(buffer.getvalue())


def _invariant_pdf(**kwargs) -> bytes:
    """docgen's policy PDF built in reportlab's invariant mode (fixed dates and document id)."""
    from reportlab import rl_config

    saved, rl_config.invariant = rl_config.invariant, 1
    try:
        return policy_pdf(**kwargs)[0]
    finally:
        rl_config.invariant = saved


def warranty_pdf() -> bytes:
    return _invariant_pdf(content=WARRANTY, title=WARRANTY_TITLE, running_header="骁途智能出行 保修说明")


def pricelist_pdf() -> bytes:
    """The price list printed with the embedded CJK font, rendered at 150 DPI and wrapped as an image-only PDF."""
    printed = _invariant_pdf(content=PRICES, title=PRICE_TITLE, running_header="骁途智能出行 2024年秋季",
                             embedded_font=True)
    pages = render_pages(printed, dpi=150)
    buffer = io.BytesIO()
    stamp = time.struct_time(FIXED.timetuple())
    pages[0].save(buffer, format="PDF", save_all=True, append_images=pages[1:], resolution=150, quality=90,
                  title=PRICE_TITLE, creationDate=stamp, modDate=stamp)
    return buffer.getvalue()


def faq_xlsx() -> bytes:
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    sheet.title = "常见问题"
    sheet.append(["问题", "答案"])
    for question, answer in FAQ:
        sheet.append([question, answer])
    sheet.column_dimensions["A"].width = 30
    sheet.column_dimensions["B"].width = 90
    book.properties.creator = BRAND
    book.properties.created = book.properties.modified = FIXED
    buffer = io.BytesIO()
    book.save(buffer)
    return _fixed_zip(buffer.getvalue())


def launch_pptx() -> bytes:
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    deck.core_properties.title = DECK_TITLE
    deck.core_properties.author = BRAND
    deck.core_properties.created = deck.core_properties.modified = FIXED
    for layout, title, lines, table, notes in SLIDES:
        if layout == "title":
            slide = deck.slides.add_slide(deck.slide_layouts[0])
            slide.shapes.title.text = title
            slide.placeholders[1].text = "\n".join(lines)
        elif layout == "bullets":
            slide = deck.slides.add_slide(deck.slide_layouts[1])
            slide.shapes.title.text = title
            frame = slide.placeholders[1].text_frame
            frame.text = lines[0]
            for line in lines[1:]:
                frame.add_paragraph().text = line
        else:
            slide = deck.slides.add_slide(deck.slide_layouts[5])
            slide.shapes.title.text = title
            top = Inches(1.6)
            if lines:
                box = slide.shapes.add_textbox(Inches(0.8), top, Inches(8.4), Inches(0.6))
                box.text_frame.text = lines[0]
                top = Inches(2.4)
            shape = slide.shapes.add_table(len(table), len(table[0]), Inches(0.8), top, Inches(8.4),
                                           Inches(0.4 * len(table)))
            for r, row in enumerate(table):
                for c, text in enumerate(row):
                    shape.table.cell(r, c).text = text
        if notes:
            slide.notes_slide.notes_text_frame.text = notes
    buffer = io.BytesIO()
    deck.save(buffer)
    return _fixed_zip(buffer.getvalue())


def policy_txt() -> bytes:
    return POLICY.replace("\n", "\r\n").encode("gbk")


FILES = {
    "manual.docx": manual_docx,
    "warranty.pdf": warranty_pdf,
    "pricelist.pdf": pricelist_pdf,
    "faq.xlsx": faq_xlsx,
    "launch.pptx": launch_pptx,
    "policy.txt": policy_txt,
}


def _items_text(title: str, items: list) -> str:
    parts = [title]
    for item in items:
        if item[0] == "t":
            parts += [" | ".join(row) for row in item[1]]
        else:
            parts.append(item[-1])
    return "\n".join(parts)


def source_texts() -> dict[str, str]:
    """Each file's text as written here (what a perfect parser reads back): answer spans are checked against it."""
    deck = [DECK_TITLE]
    for _, title, lines, table, notes in SLIDES:
        deck += [title, *lines, *(" | ".join(row) for row in table or []), notes]
    return {
        "manual.docx": _items_text(MANUAL_TITLE, MANUAL),
        "warranty.pdf": _items_text(WARRANTY_TITLE, WARRANTY),
        "pricelist.pdf": _items_text(PRICE_TITLE, PRICES),
        "faq.xlsx": "\n".join(f"{q}\n{a}" for q, a in FAQ),
        "launch.pptx": "\n".join(deck),
        "policy.txt": POLICY,
    }


def check(queries_path: Path) -> int:
    """Ids and texts unique, relevant names are files here, every span in a relevant file, every relevant file holds one."""
    texts = source_texts()
    queries = [json.loads(line) for line in queries_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    errors = []
    if len({q["id"] for q in queries}) != len(queries):
        errors.append("duplicate ids")
    if len({q["text"] for q in queries}) != len(queries):
        errors.append("duplicate texts")
    also = []
    for q in queries:
        if set(q) != {"id", "text", "relevant", "answers"}:
            errors.append(f"{q['id']}: keys {sorted(q)}")
        if bool(q["relevant"]) != bool(q["answers"]):
            errors.append(f"{q['id']}: relevant/answers mismatch")
        for name in q["relevant"]:
            if name not in texts:
                errors.append(f"{q['id']}: no file {name}")
            elif not any(a in texts[name] for a in q["answers"]):
                errors.append(f"{q['id']}: {name} holds none of {q['answers']}")
        for a in q["answers"]:
            if not any(a in texts[n] for n in q["relevant"] if n in texts):
                errors.append(f"{q['id']}: span not in a relevant file: {a}")
            others = [n for n in texts if n not in q["relevant"] and a in texts[n]]
            if others:
                also.append(f"{q['id']}: {a!r} also in {', '.join(others)}")
    answerable = sum(bool(q["relevant"]) for q in queries)
    print(f"{len(queries)} queries: {answerable} answerable, {len(queries) - answerable} unanswerable; {len(errors)} errors")
    for line in errors:
        print("  ERROR", line)
    for line in also:  # a span's words elsewhere that do not answer the question (read these by hand)
        print("  note ", line)
    return 1 if errors else 0


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        return check(Path(__file__).with_name("queries.jsonl"))
    if len(argv) != 1 or argv[0].startswith("-"):
        print(__doc__)
        return 2
    cjk_font_path()  # fails early, with the fix, when no CJK font is installed
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    for name, make in FILES.items():
        (out / name).write_bytes(make())
        print(f"{out / name}  {(out / name).stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
