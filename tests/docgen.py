"""Documents the tests and the benchmark generate: Chinese PDFs with headings and tables, scans of them, slides.

Everything is made here from text written for the purpose (no third-party documents). Each generator
returns the bytes and the truth it was made from (headings with levels, paragraphs, table rows), so a
test or ``scripts/bench_documents.py`` can score what the parsers read back.
"""
from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path

CJK_FONT_PATHS = (
    "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc",
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
)


def cjk_font_path() -> str:
    """A CJK TrueType font on this machine (``make test`` installs Debian's fonts-wqy-zenhei)."""
    for path in CJK_FONT_PATHS:
        if Path(path).exists():
            return path
    raise RuntimeError("no CJK font found; install Debian's fonts-wqy-zenhei (scripts/ensure_ocr.sh does)")


@dataclass
class Truth:
    """What a generated document holds, in reading order."""

    title: str = ""
    headings: list[tuple[int, str]] = field(default_factory=list)
    paragraphs: list[str] = field(default_factory=list)
    tables: list[list[list[str]]] = field(default_factory=list)
    flow: list[str] = field(default_factory=list)  # everything printed in the body, in reading order


# --- content ----------------------------------------------------------------------------------

POLICY_TITLE = "星河科技有限公司差旅费管理办法"
POLICY = [
    ("h", 1, "第一章 总则"),
    ("p", "第一条 为规范公司员工因公出差的审批和费用报销，合理控制差旅成本，根据国家有关规定，结合公司实际情况，制定本办法。"),
    ("p", "第二条 本办法适用于公司总部及各分支机构的全体正式员工、试用期员工和实习生。"),
    ("h", 1, "第二章 出差审批"),
    ("p", "第三条 员工出差前应当在办公系统中填写出差申请单，写明出差事由、地点、天数和预计费用，经部门负责人批准后方可出行。"),
    ("p", "第四条 出差期间因工作需要延长行程的，应当在原定返回日期前向部门负责人说明原因并补办审批手续。"),
    ("h", 1, "第三章 费用标准"),
    ("p", "第五条 住宿费按照出差城市类别和员工职级分别核定，超出标准的部分由员工个人承担。具体标准见下表。"),
    ("t", [["城市类别", "职级", "住宿上限（元/晚）", "伙食补助（元/天）"],
           ["一类城市", "总监及以上", "900", "150"],
           ["一类城市", "经理", "700", "120"],
           ["一类城市", "专员", "500", "100"],
           ["二类城市", "总监及以上", "700", "120"],
           ["二类城市", "经理", "550", "100"],
           ["二类城市", "专员", "400", "80"]]),
    ("p", "第六条 乘坐火车的，总监及以上职级可乘坐一等座，其他人员乘坐二等座；乘坐飞机的，一律乘坐经济舱。"),
    ("h", 1, "第四章 报销流程"),
    ("p", "第七条 员工应当在出差结束后十个工作日内提交报销申请，并附上发票、行程单和出差申请单。逾期提交的，财务部门有权不予受理。"),
    ("p", "第八条 财务部门应当在收到完整材料后五个工作日内完成审核，审核通过的费用于次月工资发放日一并支付。"),
    ("h", 1, "第五章 附则"),
    ("p", "第九条 本办法由公司财务部负责解释，自二〇二四年三月一日起施行。"),
]

MANUAL_TITLE = "知库平台运维手册"
_SERVERS = [["序号", "主机名", "用途", "内存（GB）", "负责人"]] + [
    [str(i), f"zk-node-{i:02d}", ["数据库", "检索服务", "入库任务", "网页服务"][i % 4], str(16 * (1 + i % 3)),
     ["张伟", "李娜", "王强", "刘洋", "陈静"][i % 5]]
    for i in range(1, 29)
]
# Levels as a reader sees them: 一、 1, （一） 2; under 二、 (no （一） there) 1. is 2 and 1.1 is 3.
MANUAL = [
    ("h", 1, "一、系统概述"),
    ("p", "知库平台由网页服务、检索服务、入库任务和数据库四部分组成。各部分可以部署在同一台服务器上，也可以分开部署以提高可用性。"),
    ("h", 2, "（一）部署要求"),
    ("p", "生产环境至少需要两台服务器，每台内存不少于十六吉字节。数据库服务器应当使用固态硬盘，并开启每日备份。"),
    ("h", 2, "（二）网络要求"),
    ("p", "各服务器之间的网络延迟应当低于五毫秒。对外只开放网页服务的端口，其余端口仅在内网可见。"),
    ("h", 1, "二、日常维护"),
    ("h", 2, "1. 巡检"),
    ("p", "运维人员每天上午检查各服务的运行状态、磁盘用量和错误日志，发现异常应当在一小时内处理并记录。"),
    ("h", 3, "1.1 服务器清单"),
    ("p", "下表列出当前生产环境的全部服务器及其负责人。"),
    ("t", _SERVERS),
    ("h", 3, "1.2 备份检查"),
    ("p", "每周一检查上周的数据库备份是否完整，并在测试环境中恢复一次，确认备份可以使用。"),
    ("h", 2, "2. 故障处理"),
    ("p", "发生故障时，值班人员应当先恢复服务，再查找原因。加班时间按一点五倍计算调休。"),
]




# --- PDFs with reportlab ----------------------------------------------------------------------


def _reportlab_font(embedded: bool) -> str:
    from reportlab.pdfbase import pdfmetrics

    if embedded:
        from reportlab.pdfbase.ttfonts import TTFont

        if "ZhikuCJK" not in pdfmetrics.getRegisteredFontNames():
            pdfmetrics.registerFont(TTFont("ZhikuCJK", cjk_font_path(), subfontIndex=0))
        return "ZhikuCJK"
    from reportlab.pdfbase.cidfonts import UnicodeCIDFont

    if "STSong-Light" not in pdfmetrics.getRegisteredFontNames():
        pdfmetrics.registerFont(UnicodeCIDFont("STSong-Light"))
    return "STSong-Light"


def policy_pdf(*, content: list | None = None, title: str = POLICY_TITLE, running_header: str = "星河科技 内部文件",
               embedded_font: bool = False, pad_pages: int = 0, ruled: bool = True) -> tuple[bytes, Truth]:
    """A policy-style PDF: a title, numbered headings, paragraphs, ruled tables, a running header and
    page-number footer on every page. ``pad_pages`` filler paragraphs push later content (and a long
    table) across page breaks. ``embedded_font`` embeds a TrueType CJK font, needed to render the pages
    as images (STSong-Light is a standard CID font that renderers may not have). ``ruled=False`` draws the
    tables without lines or shading (reportlab's default ``Table``, as most exported reports look)."""
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import ParagraphStyle
    from reportlab.lib.units import mm
    from reportlab.platypus import Paragraph, SimpleDocTemplate, Spacer, Table, TableStyle

    content = POLICY if content is None else content
    font = _reportlab_font(embedded_font)
    body = ParagraphStyle("body", fontName=font, fontSize=11, leading=17, firstLineIndent=22, spaceAfter=6,
                          wordWrap="CJK")
    heads = {level: ParagraphStyle(f"h{level}", fontName=font, fontSize=size, leading=size * 1.5, spaceBefore=8,
                                   spaceAfter=6, wordWrap="CJK")
             for level, size in ((1, 15), (2, 13), (3, 12), (4, 11))}
    title_style = ParagraphStyle("title", fontName=font, fontSize=20, leading=28, alignment=1, spaceAfter=12)
    truth = Truth(title=title, flow=[title])
    story: list = [Paragraph(title, title_style)]
    filler = ("为保证制度执行到位，各部门应当组织员工认真学习本办法，明确审批权限和报销要求，"
              "对执行中发现的问题及时向财务部门反馈，财务部门应当定期汇总分析并提出改进建议。")
    for item in content:
        if item[0] == "h":
            story.append(Paragraph(item[2], heads[min(item[1], 4)]))
            truth.headings.append((item[1], item[2]))
            truth.flow.append(item[2])
        elif item[0] == "p":
            story.append(Paragraph(item[1], body))
            truth.flow.append(item[1])
            label, _, rest = item[1].partition(" ")
            if label.startswith("第") and label.endswith("条") and rest:  # an article: its number is a heading
                truth.headings.append((2, label))
                truth.paragraphs.append(rest)
            else:
                truth.paragraphs.append(item[1])
        elif item[0] == "t":
            rows = item[1]
            table = Table([[Paragraph(c, ParagraphStyle("cell", fontName=font, fontSize=10, leading=13,
                                                        wordWrap="CJK")) for c in row] for row in rows],
                          repeatRows=1, hAlign="LEFT")
            style = [("VALIGN", (0, 0), (-1, -1), "MIDDLE")]
            if ruled:
                style += [("GRID", (0, 0), (-1, -1), 0.6, colors.black),
                          ("BACKGROUND", (0, 0), (-1, 0), colors.whitesmoke)]
            table.setStyle(TableStyle(style))
            story.append(table)
            story.append(Spacer(1, 6))
            truth.tables.append([list(r) for r in rows])
            truth.flow.extend(" ".join(row) for row in rows)
        elif item[0] == "pad":
            for _ in range(item[1]):
                story.append(Paragraph(filler, body))
                truth.paragraphs.append(filler)
                truth.flow.append(filler)
    for _ in range(pad_pages):
        story.append(Paragraph(filler, body))
        truth.paragraphs.append(filler)
        truth.flow.append(filler)

    def decorate(canvas, doc) -> None:  # running header and page number, as printed documents have
        canvas.saveState()
        canvas.setFont(font, 9)
        canvas.drawString(20 * mm, A4[1] - 12 * mm, running_header)
        canvas.drawCentredString(A4[0] / 2, 10 * mm, f"- {doc.page} -")
        canvas.restoreState()

    buffer = io.BytesIO()
    SimpleDocTemplate(buffer, pagesize=A4, leftMargin=20 * mm, rightMargin=20 * mm, topMargin=22 * mm,
                      bottomMargin=20 * mm, title=title).build(story, onFirstPage=decorate, onLaterPages=decorate)
    return buffer.getvalue(), truth


def manual_pdf(**kwargs) -> tuple[bytes, Truth]:
    """The operations manual: 一、/（一）/1./1.1 headings and a 28-row table that runs over a page break."""
    return policy_pdf(content=[*MANUAL[:11], ("pad", 5), *MANUAL[11:]], title=MANUAL_TITLE,
                      running_header="知库平台 运维手册", **kwargs)


# --- images -----------------------------------------------------------------------------------


def render_pages(pdf: bytes, *, dpi: int = 150) -> list:
    """The PDF's pages as Pillow images (pypdfium2, which pdfplumber brings)."""
    import pypdfium2

    document = pypdfium2.PdfDocument(pdf)
    try:
        return [document[i].render(scale=dpi / 72).to_pil().convert("RGB") for i in range(len(document))]
    finally:
        document.close()


def scanned_pdf(images: list, *, dpi: int = 150) -> bytes:
    """Images wrapped as a PDF with no text layer, as a scanner makes them."""
    buffer = io.BytesIO()
    images[0].save(buffer, format="PDF", save_all=True, append_images=images[1:], resolution=dpi, quality=90)
    return buffer.getvalue()


def text_image(lines: list[str], *, size: int = 28, width: int = 1100, fmt: str = "PNG",
               background: str = "white") -> bytes:
    """A screenshot-like image of ``lines`` drawn with the CJK font."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype(cjk_font_path(), size)
    line_height = int(size * 1.6)
    image = Image.new("RGB", (width, 40 + line_height * len(lines)), background)
    draw = ImageDraw.Draw(image)
    for index, line in enumerate(lines):
        draw.text((30, 20 + index * line_height), line, font=font, fill="black")
    buffer = io.BytesIO()
    image.save(buffer, format=fmt)
    return buffer.getvalue()


def table_image(rows: list[list[str]], *, before: tuple[str, ...] = (), after: tuple[str, ...] = (), size: int = 24,
                width: int = 1000, layout: list[list[str]] | None = None):
    """A borderless table drawn with the CJK font (no lines, no shading, as an exported report or a screenshot of a
    plain spreadsheet shows it), with lines of text ``before`` and ``after`` it, as a Pillow image. Columns are as
    wide as the widest cell of ``layout`` (``rows`` by default) and two characters apart, so that the pages of one
    table split over several images keep their columns."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype(cjk_font_path(), size)
    layout = rows if layout is None else layout
    widths = [max(font.getlength(row[c]) for row in layout) for c in range(len(layout[0]))]
    lefts = [30 + sum(widths[:c]) + 2 * size * c for c in range(len(widths))]
    line_height, row_height = int(size * 1.6), int(size * 1.8)
    height = 40 + line_height * (len(before) + len(after)) + row_height * len(rows) + size
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    top = 20
    for line in before:
        draw.text((30, top), line, font=font, fill="black")
        top += line_height
    top += size // 2
    for row in rows:
        for left, cell in zip(lefts, row, strict=True):
            draw.text((left, top), cell, font=font, fill="black")
        top += row_height
    top += size // 2
    for line in after:
        draw.text((30, top), line, font=font, fill="black")
        top += line_height
    return image


def png_bytes(image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


# --- slides -----------------------------------------------------------------------------------


def slides_pptx() -> bytes:
    """Three slides: a title slide, bullets with speaker notes, and a table."""
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    deck.core_properties.title = "二〇二四年度产品规划"
    first = deck.slides.add_slide(deck.slide_layouts[0])
    first.shapes.title.text = "二〇二四年度产品规划"
    first.placeholders[1].text = "产品部 二〇二四年一月"
    second = deck.slides.add_slide(deck.slide_layouts[1])
    second.shapes.title.text = "核心目标"
    frame = second.placeholders[1].text_frame
    frame.text = "上线知识库问答功能"
    frame.add_paragraph().text = "检索准确率提升到百分之九十"
    second.notes_slide.notes_text_frame.text = "讲解时强调：问答功能在第二季度上线。"
    third = deck.slides.add_slide(deck.slide_layouts[5])
    third.shapes.title.text = "季度里程碑"
    rows = [["季度", "里程碑"], ["第一季度", "完成检索改造"], ["第二季度", "上线问答功能"]]
    shape = third.shapes.add_table(3, 2, Inches(1), Inches(2), Inches(6), Inches(1.5))
    for r, row in enumerate(rows):
        for c, text in enumerate(row):
            shape.table.cell(r, c).text = text
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()


# --- hostile files: they cost little to make and much to read -----------------------------------


def raw_pdf(page_contents: list[bytes], *, images: dict[int, bytes] | None = None) -> bytes:
    """A PDF written object by object: one page per content stream (raw bytes, already encoded, with their
    ``/Filter`` in the first line when compressed), Helvetica as font. A page number in ``images`` gets
    that JPEG, drawn over the whole page, as its only content (a scanned page)."""
    objects: list[bytes] = [b"", b"", b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    kids = []
    streams: dict[bytes, int] = {}
    for number, content in enumerate(page_contents, start=1):
        if images and number in images:
            jpeg = images[number]
            from PIL import Image

            width, height = Image.open(io.BytesIO(jpeg)).size
            objects.append(b"<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceRGB"
                           b" /BitsPerComponent 8 /Filter /DCTDecode /Length %d >>\nstream\n" % (width, height, len(jpeg))
                           + jpeg + b"\nendstream")
            image_ref = len(objects)
            content = b"q 595 0 0 842 0 0 cm /Im0 Do Q"
            resources = b"<< /XObject << /Im0 %d 0 R >> >>" % image_ref
        else:
            resources = b"<< /Font << /F1 3 0 R >> >>"
        if content not in streams:  # pages with the same content share one stream
            head, _, body = content.partition(b"\n") if content.startswith(b"/Filter") else (b"", b"", content)
            objects.append(b"<< /Length %d %s >>\nstream\n" % (len(body), head) + body + b"\nendstream")
            streams[content] = len(objects)
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources %s /Contents %d 0 R >>"
                       % (resources, streams[content]))
        kids.append(len(objects))
    objects[0] = b"<< /Type /Catalog /Pages 2 0 R >>"
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % k for k in kids), len(kids))
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def text_page(text: str) -> bytes:
    """A content stream printing ``text`` (ASCII) in lines down the page."""
    lines = [b"BT /F1 11 Tf 60 780 Td 14 TL"] + [b"(%s) '" % line.encode() for line in text.split("\n")] + [b"ET"]
    return b"\n".join(lines)


def many_pages_pdf(pages: int) -> bytes:
    """``pages`` pages of the same paragraph: a few kilobytes that take pdfplumber a while to read."""
    body = "\n".join(f"Line {i}: the travel policy applies to every employee on a business trip." for i in range(40))
    return raw_pdf([text_page(body)] * pages)


def flate_bomb_pdf(inflated_mib: int = 1024) -> bytes:
    """A one-page PDF whose content stream is ``inflated_mib`` MiB of zeros, compressed to about a thousandth.

    Deflate with a full flush after each MiB makes every MiB after the first compress to the same bytes,
    so the stream is those bytes repeated, closed with the zlib checksum of that many zeros (Adler-32 of
    n zero bytes: 1, plus n mod 65521 in the high half); nothing of the inflated size is ever built here.
    """
    import struct
    import zlib

    mib = bytes(1024 * 1024)
    deflate = zlib.compressobj(9)
    first = deflate.compress(mib) + deflate.flush(zlib.Z_FULL_FLUSH)
    repeated = deflate.compress(mib) + deflate.flush(zlib.Z_FULL_FLUSH)
    final_block = deflate.flush()[:-4]
    size = inflated_mib * 1024 * 1024
    stream = first + repeated * (inflated_mib - 1) + final_block + struct.pack(">I", ((size % 65521) << 16) | 1)
    return raw_pdf([b"/Filter /FlateDecode\n" + stream])


def faq_xlsx(rows: list[tuple[str, str]], *, declared: str | None = None) -> bytes:
    """An FAQ sheet (header 问题/答案, then ``rows``); ``declared`` rewrites its ``<dimension ref>``, as a
    hostile or broken writer may, e.g. ``"A1:XFD1048576"`` for three filled rows."""
    import re
    import zipfile

    import openpyxl

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.append(["问题", "答案"])
    for row in rows:
        sheet.append(list(row))
    buffer = io.BytesIO()
    workbook.save(buffer)
    if declared is None:
        return buffer.getvalue()
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(buffer.getvalue())) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            data = source.read(info.filename)
            if info.filename.startswith("xl/worksheets/sheet"):
                data = re.sub(rb'<dimension ref="[^"]*"/>', b'<dimension ref="%s"/>' % declared.encode(), data)
            target.writestr(info, data)
    return out.getvalue()


def dimension_bomb_xlsx(rows: list[tuple[str, str]]) -> bytes:
    """``faq_xlsx(rows)`` whose sheet declares the whole grid (``A1:XFD1048576``, 17 billion cells) and holds one
    more cell in its very last one, ``XFD1048576``: a reader that trusts either builds the grid (a few KB of file)."""
    import re
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(faq_xlsx(rows, declared="A1:XFD1048576"))) as source, \
            zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            data = source.read(info.filename)
            if info.filename.startswith("xl/worksheets/sheet"):
                last = b'<row r="1048576"><c r="XFD1048576" t="inlineStr"><is><t>end</t></is></c></row>'
                data = re.sub(rb"</sheetData>", last + b"</sheetData>", data)
            target.writestr(info, data)
    return out.getvalue()
