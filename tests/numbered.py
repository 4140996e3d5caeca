"""Chinese numbered documents (a policy, a contract, a regulation, a notice) and where each article or body belongs.

Each document is its title and lines, one paragraph a line, numbered as Chinese offices number them; ``EXPECTED``
gives, for a distinctive phrase of each body, the section path its chunk must have. ``as_txt``, ``as_docx`` and
``as_pdf`` write the same lines as a file of each kind (no heading styles: the structure is the numbering), and
``placed`` measures how many of the checked chunks sit under their right path. Used by tests/knowledge/
test_numbering.py and scripts/bench_documents.py.
"""
from __future__ import annotations

import io

POLICY = ("差旅费管理办法", [
    "第一章 总则",
    "第一条 为规范公司差旅费管理，合理控制费用支出，制定本办法。",
    "第二条 本办法适用于公司全体员工。",
    "第二章 费用标准",
    "一、交通费",
    "第三条 员工乘坐火车的，报销二等座票价；乘坐飞机的，报销经济舱票价。",
    "二、住宿费",
    "（一）一线城市",
    "第四条 一线城市住宿费每晚不超过六百元。",
    "（二）其他城市",
    "第五条 其他城市住宿费每晚不超过四百元。",
    "第三章 附则",
    "第六条 本办法自二〇二四年一月一日起施行。",
])
CONTRACT = ("设备采购合同", [
    "一、合同标的",
    "（一）设备清单",
    "1. 服务器",
    "甲方向乙方采购机架式服务器十台，型号为XH-2000。",
    "2. 交换机",
    "甲方向乙方采购万兆交换机四台。",
    "（二）交付地点",
    "乙方应当将设备运抵甲方数据中心并完成安装。",
    "二、付款方式",
    "（一）预付款",
    "1. 预付比例",
    "合同签订后五个工作日内，甲方支付合同总价的百分之三十。",
    "(1) 支付条件",
    "乙方提交等额的预付款保函后支付。",
    "(2) 支付方式",
    "预付款以银行转账方式支付至乙方指定账户。",
    "2. 尾款",
    "设备验收合格后十个工作日内支付剩余款项。",
    "三、违约责任",
    "第七条 乙方逾期交货的，每逾期一日按合同总价的千分之一支付违约金。",
])
REGULATION = ("数据安全管理条例", [
    "第一编 总则",
    "第一章 一般规定",
    "第一条 为加强公司数据安全管理，保护数据资产，制定本条例。",
    "第二章 数据分类",
    "第一节 分类原则",
    "第二条 数据按照其重要程度分为核心数据、重要数据和一般数据。",
    "一、核心数据",
    "第三条 核心数据实行目录管理和重点保护。",
    "二、重要数据",
    "第四条 重要数据应当每日备份并异地保存。",
    "第二节 分级管理",
    "第五条 各级数据由数据管理部门统一登记。",
    "第二编 附则",
    "第三章 施行",
    "第六条 本条例自发布之日起施行。",
])
# 1. before （一）: the kinds nest by their order of first appearance, not by the conventional order.
NOTICE = ("关于开展安全检查的通知", [
    "1. 检查范围",
    "（一）办公区域",
    "各部门办公室、会议室和档案室。",
    "（二）生产区域",
    "生产车间、仓库和配电房。",
    "2. 检查时间",
    "五月十日至五月二十日，各部门自查后由安全办抽查。",
])
DOCUMENTS = {"policy": POLICY, "contract": CONTRACT, "regulation": REGULATION, "notice": NOTICE}

EXPECTED = {
    "policy": {
        "为规范公司差旅费管理": ["第一章 总则"],
        "本办法适用于公司全体员工": ["第一章 总则"],
        "报销二等座票价": ["第二章 费用标准", "一、交通费"],
        "不超过六百元": ["第二章 费用标准", "二、住宿费", "（一）一线城市"],
        "不超过四百元": ["第二章 费用标准", "二、住宿费", "（二）其他城市"],
        "起施行": ["第三章 附则"],
    },
    "contract": {
        "机架式服务器": ["一、合同标的", "（一）设备清单", "1. 服务器"],
        "万兆交换机": ["一、合同标的", "（一）设备清单", "2. 交换机"],
        "数据中心": ["一、合同标的", "（二）交付地点"],
        "百分之三十": ["二、付款方式", "（一）预付款", "1. 预付比例"],
        "预付款保函": ["二、付款方式", "（一）预付款", "1. 预付比例", "(1) 支付条件"],
        "银行转账": ["二、付款方式", "（一）预付款", "1. 预付比例", "(2) 支付方式"],
        "剩余款项": ["二、付款方式", "（一）预付款", "2. 尾款"],
        "千分之一": ["三、违约责任"],
    },
    "regulation": {
        "保护数据资产": ["第一编 总则", "第一章 一般规定"],
        "分为核心数据": ["第一编 总则", "第二章 数据分类", "第一节 分类原则"],
        "目录管理": ["第一编 总则", "第二章 数据分类", "第一节 分类原则", "一、核心数据"],
        "异地保存": ["第一编 总则", "第二章 数据分类", "第一节 分类原则", "二、重要数据"],
        "统一登记": ["第一编 总则", "第二章 数据分类", "第二节 分级管理"],
        "发布之日": ["第二编 附则", "第三章 施行"],
    },
    "notice": {
        "档案室": ["1. 检查范围", "（一）办公区域"],
        "配电房": ["1. 检查范围", "（二）生产区域"],
        "安全办抽查": ["2. 检查时间"],
    },
}


def headings_of(name: str) -> set[str]:
    """The lines of a document that are headings (its numbered lines but the articles, which carry a body)."""
    from knowledge.parsers.headings import candidate

    return {line for line in DOCUMENTS[name][1]
            if (found := candidate(line)) is not None and not found.rest and found.kind != "article"}


def as_txt(name: str, encoding: str = "utf-8") -> bytes:
    title, lines = DOCUMENTS[name]
    return "\n\n".join([title, *lines]).encode(encoding)


def as_docx(name: str, *, styled_title: bool = False) -> bytes:
    """Plain paragraphs; the title a paragraph of its own, or in the Title style."""
    import docx

    title, lines = DOCUMENTS[name]
    document = docx.Document()
    if styled_title:
        document.add_heading(title, level=0)
    else:
        document.add_paragraph(title)
    for line in lines:
        document.add_paragraph(line)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def as_pdf(name: str) -> bytes:
    """A text PDF: the title large on top, every numbered line a body paragraph (no larger heading font). No running
    header: on a one-page file nothing tells it from the text (the layout drops headers repeated across pages)."""
    from tests.docgen import policy_pdf

    title, lines = DOCUMENTS[name]
    data, _ = policy_pdf(content=[("p", line) for line in lines], title=title, running_header="")
    return data


def placed(chunks, name: str) -> tuple[int, int, list[str]]:
    """``(right, checked, wrong)``: the expected phrases whose chunk has the right section path."""
    right, wrong = 0, []
    for phrase, path in EXPECTED[name].items():
        found = [c for c in chunks if phrase in c.content]
        if found and all(list(c.section_path) == path for c in found):
            right += 1
        else:
            wrong.append(f"{phrase}: {[list(c.section_path) for c in found]} ≠ {path}")
    return right, len(EXPECTED[name]), wrong


def heading_only(chunks, name: str) -> list[str]:
    """The chunks whose content is nothing but headings (or the title)."""
    title = DOCUMENTS[name][0]
    heads = headings_of(name) | {title}
    return [c.content for c in chunks
            if all(" ".join(line.split()) in heads for line in c.content.split("\n") if line.strip())]


def measure() -> dict:
    """For scripts/bench_documents.py: per format, the checked chunks under their right path and the heading-only
    chunks, over the four documents."""
    from knowledge.chunking import chunk_document
    from knowledge.parsers import parse_file

    formats = {"txt (GBK)": lambda n: (f"{n}.txt", as_txt(n, "gbk")), "docx": lambda n: (f"{n}.docx", as_docx(n)),
               "docx (Title style)": lambda n: (f"{n}.docx", as_docx(n, styled_title=True)),
               "pdf": lambda n: (f"{n}.pdf", as_pdf(n))}
    report = {}
    for label, make in formats.items():
        right = checked = only_headings = chunks_total = 0
        wrong: list[str] = []
        for name in DOCUMENTS:
            chunks = chunk_document(parse_file(*make(name)))
            r, n, w = placed(chunks, name)
            right, checked, wrong = right + r, checked + n, wrong + w
            only_headings += len(heading_only(chunks, name))
            chunks_total += len(chunks)
        report[label] = {"right_path": right, "checked": checked, "share": round(right / checked, 4),
                         "heading_only_chunks": only_headings, "chunks": chunks_total, "wrong": wrong}
    return report
