"""Extractive answers (no LLM): the answer-bearing sentence, headings, FAQ scaffolding, lists, the source floor."""
from __future__ import annotations

from chat.extractive import extractive_answer, holds, is_list_question, question_asks
from chat.prompts import answer_candidates, context_build
from knowledge.retrieval.types import Candidate
from tests.gfm import gfm_tables


def cand(chunk_id: int, content: str, *, relevance: float = 0.9, chunk_type: str = "text",
         section_path: tuple[str, ...] = (), metadata: dict | None = None, title: str = "文档") -> Candidate:
    return Candidate(chunk_id=chunk_id, kb_id=1, document_id=chunk_id, content=content, title=title,
                     section_path=list(section_path), chunk_type=chunk_type, metadata=metadata or {},
                     relevance=relevance)


def answer(question: str, *candidates: Candidate, **kwargs) -> str:
    return extractive_answer(question, context_build(list(candidates)).sources, **kwargs)


def test_a_heading_line_is_never_glued_to_the_text():
    text = "第四季度市场预算\n第四季度市场推广预算为 120 万元，其中线上广告 80 万元。"
    got = answer("第四季度市场推广预算是多少", cand(1, text, section_path=("预算",)))
    assert got == "第四季度市场推广预算为 120 万元，其中线上广告 80 万元。[1]"


def test_a_section_title_in_the_text_is_left_out():
    text = "## 价格\n价格\n知库专业版的价格为每年 9800 元。"
    assert answer("知库专业版的价格", cand(1, text, section_path=("知库专业版", "价格"))) == "知库专业版的价格为每年 9800 元。[1]"


def test_a_faq_answer_is_quoted_without_its_question_and_answer_labels():
    faq = cand(1, "问：如何重置登录密码？\n答：在登录页点击「忘记密码」，按短信验证码设置新密码。", chunk_type="faq",
               metadata={"question": "如何重置登录密码？", "answer": "在登录页点击「忘记密码」，按短信验证码设置新密码。"})
    got = answer("忘记密码怎么重置", faq)
    assert got == "在登录页点击「忘记密码」，按短信验证码设置新密码。[1]"


def test_a_short_faq_answer_is_quoted_whole_even_when_a_later_sentence_matches_best():
    text = "长按设备复位键 5 秒，指示灯快闪后重新添加设备。多次失败可在 App「帮助与反馈」中上传配网日志。"
    faq = cand(1, f"问：配网失败怎么办？\n答：{text}", chunk_type="faq", metadata={"question": "配网失败怎么办？", "answer": text})
    assert answer("配网一直失败", faq) == f"{text}[1]"


def test_the_documents_topic_does_not_choose_the_sentence_the_question_s_other_words_do():
    """The title's words (the topic) are in the question and spelled out in the first sentences; the answer says 牠们."""
    text = ("马岛灵猫，又名马尔加什灵猫或马岛麝猫，是马达加斯加特有的一种食蚁狸科动物。"
            "马岛灵猫以往与横带狸猫一同分类在缟狸亚科中，及后再分类在自己的亚科中，但现已改在食蚁狸亚科中。"
            "马岛灵猫亦属于马岛灵猫属或马岛缟狸属。牠们是夜间活动的，是独居的或是成对生活的。"
            "牠们以细小的脊椎动物、昆虫及鸟蛋为食。")
    got = answer("马岛灵猫以什么为食？", cand(1, text, title="马岛灵猫"), max_chars=60)
    assert "牠们以细小的脊椎动物、昆虫及鸟蛋为食。" in got
    untitled = answer("马岛灵猫以什么为食？", cand(1, text, title=""), max_chars=60)
    assert "为食" not in untitled  # without the title, the sentences spelling out the full name win


def test_the_sentence_after_the_best_one_comes_when_it_holds_what_is_asked():
    text = ("明成祖朱棣即位后，决定把国都从南京迁到北京，并为此营建紫禁城。" * 1
            + "那一年是 1421 年。此后北京成为明朝的首都，直到明朝灭亡。城墙后来又多次修缮。")
    got = answer("明成祖迁都北京是在哪一年", cand(1, text))
    assert "1421" in got and got.index("迁到北京") < got.index("1421")


def test_the_chunk_that_answers_is_chosen_over_the_one_that_spells_out_the_documents_name():
    """Two chunks of the entry 「马岛灵猫」: the first names it in full, the second answers and says 牠们."""
    intro = "马岛灵猫，又名马尔加什灵猫或马岛麝猫，是马达加斯加特有的一种食蚁狸科动物，马岛灵猫亦属于马岛灵猫属。"
    diet = "牠们是夜间活动的，是独居的或是成对生活的。牠们以细小的脊椎动物、昆虫及鸟蛋为食。"
    got = answer("马岛灵猫以什么为食？", cand(1, intro, title="马岛灵猫"), cand(2, diet, title="马岛灵猫"))
    first = got.split("\n\n")[0]
    assert first.endswith("[2]") and "鸟蛋为食" in first
    untitled = answer("马岛灵猫以什么为食？", cand(1, intro, title=""), cand(2, diet, title=""))
    assert untitled.startswith("马岛灵猫，又名")  # without its title the second chunk does not say what it is about


def test_a_sentence_that_refers_back_comes_with_the_sentence_it_refers_to():
    """「因此他提出……」: who 他 is stands in the sentence before."""
    text = ("第一次世界大战结束后，各国都在寻找避免战争的办法。美国总统威尔逊认为秘密外交是战争的根源。"
            "因此他提出建立国际联盟以维持国际秩序。但欧洲强国普遍认为这种构想过于理想主义。")
    got = answer("建立国际联盟以维持国际秩序是谁提出的？", cand(1, text))
    assert "美国总统威尔逊认为秘密外交是战争的根源。因此他提出建立国际联盟" in got
    plain = answer("国际联盟是为了维持什么？", cand(1, text.replace("因此他提出", "他们提出"), title=""), max_chars=20)
    assert "威尔逊" in plain  # 他们 refers back too


def test_a_sentence_announcing_a_table_brings_the_table_one_row_a_line():
    text = ("第九条 出差城市分为三类，一类城市为北京、上海、广州、深圳。\n"
            "第十条 员工出差住宿费实行限额报销，每人每晚标准如下（单位：元）：\n"
            "| 职级 | 一类城市 | 二类城市 |\n| --- | --- | --- |\n| 总监 | 700 | 550 |\n| 经理 | 550 | 450 |\n"
            "第十一条 超出标准部分由个人承担。")
    got = answer("出差住宿每晚标准是多少？", cand(1, text))
    assert ("每人每晚标准如下（单位：元）：\n\n| 职级 | 一类城市 | 二类城市 |\n| --- | --- | --- |\n| 总监 | 700 | 550 |\n"
            "| 经理 | 550 | 450[1] |") in got
    assert gfm_tables(got) == [[["职级", "一类城市", "二类城市"], ["总监", "700", "550"], ["经理", "550", "450[1]"]]]


def test_a_list_question_gets_the_whole_list_one_item_a_line():
    text = "安装知库的步骤如下：\n1. 下载安装包。\n2. 运行 make run 启动服务。\n3. 打开浏览器登录。\n另外也可以使用容器部署，镜像很小。"
    got = answer("安装知库有哪些步骤？", cand(1, text))
    assert got.startswith("安装知库的步骤如下：\n- 下载安装包。\n- 运行 make run 启动服务。\n- 打开浏览器登录。")
    assert got.endswith("[1]")


def test_the_rare_words_choose_the_sentence_over_the_subject_repeated_everywhere():
    text = ("白尾雀鲷，又称金尾雀鲷，为雀鲷科的其中一种。白尾雀鲷分布于印度太平洋区，包括红海、东非至萨摩亚。"
            "白尾雀鲷栖息于水深 0.5 至 3 公尺的珊瑚礁区。白尾雀鲷体长可达 10 公分。")
    got = answer("白尾雀鲷栖息在水深多少的海域？", cand(1, text), max_chars=40)
    assert got.startswith("白尾雀鲷栖息于水深 0.5 至 3 公尺")


def test_question_kinds_and_what_holds_them():
    assert question_asks("光绪皇帝是哪一年即位的？") == "date"
    assert question_asks("波斯黇鹿现存多少头？") == "number"
    assert question_asks("余下的栖息地在哪里？") == "place"
    assert question_asks("林投姐的导演是谁？") == "person"
    assert question_asks("为什么要修建闸桥？") is None
    assert holds("date", "1421 年迁都") and not holds("date", "迁都北京")
    assert holds("number", "现存 650 头") and not holds("number", "现存很少")
    assert is_list_question("有哪些步骤") and not is_list_question("价格是多少")


def test_sources_below_the_floor_are_left_out_but_the_first_is_kept():
    chunks = [cand(1, "甲。", relevance=0.3), cand(2, "乙。", relevance=0.6), cand(3, "丙。", relevance=0.1),
              Candidate(chunk_id=4, kb_id=1, document_id=4, content="丁。", relevance=None)]
    assert [c.chunk_id for c in answer_candidates(chunks, threshold=0.5)] == [1, 2]
    assert [c.chunk_id for c in answer_candidates(chunks, threshold=0.5, max_sources=1)] == [1]
    assert [c.chunk_id for c in answer_candidates(chunks, threshold=0.0)] == [1, 2, 3]


def test_a_second_source_is_quoted_only_when_it_scores_close_to_the_first():
    first = cand(1, "知库专业版的价格为每年 9800 元。")
    unrelated = cand(2, "知库的安装需要 Python 3.11。")
    got = answer("知库专业版的价格是多少", first, unrelated)
    assert got == "知库专业版的价格为每年 9800 元。[1]"


# --- answers that hold the answer: table rows, code blocks, the kind of thing asked for ---------------------------

SPECS = "| 参数 | 数值 |\n| --- | --- |\n| 续航里程 | 80公里 |\n| 充电时间 | 6至8小时 |\n| 整车重量 | 55公斤 |"
WARRANTY = ("| 部件 | 保修期 | 说明 |\n| --- | --- | --- |\n| 车架 | 3年 | 非人为断裂免费更换 |\n| 锂电池 | 2年 | 容量低于70%免费更换 |\n"
            "| 控制器 | 1年 | 进水损坏不保修 |")


def test_a_table_row_that_states_the_duration_asked_for_is_chosen_over_a_sentence_that_shares_its_words():
    """「充电要多长时间？」: the manual's care sentence holds 充电 and a duration too, but the spec row states it."""
    care = cand(1, "充电时请使用原厂充电器，并在通风干燥处充电。不要长时间连续充电超过12小时。", section_path=("充电与保养",))
    light = cand(2, "电池充满后，充电器指示灯由红变绿。", section_path=("充电与保养",))
    specs = cand(3, SPECS, chunk_type="table", section_path=("技术参数",))
    got = answer("充电要多长时间？", care, light, specs)
    assert got.startswith("| 参数 | 数值 |\n| --- | --- |\n| 充电时间 | 6至8小时[3] |")
    assert gfm_tables(got)[0] == [["参数", "数值"], ["充电时间", "6至8小时[3]"]]
    assert "续航里程" not in got and "整车重量" not in got


def test_a_date_line_is_quoted_for_a_when_question_not_only_the_lines_naming_the_product():
    """「E7什么时候上市？」: the launch slide's date line is short and unpunctuated, yet it is the answer, not a heading."""
    prices = cand(1, "E7 标准版 3999元\nE7 长续航版 4599元\nE5 标准版 2999元", title="2024 价格表")
    launch = cand(2, "E7 新品发布\n2024年10月1日起在全国门店上市\n首批用户赠送头盔一顶。", title="E7 发布会",
                  section_path=("E7 新品发布",))
    got = answer("E7什么时候上市？", prices, launch)
    assert got.startswith("2024年10月1日起在全国门店上市")
    one_list = cand(1, "E7 标准版 3999元\nE7 长续航版 4599元\n2024年10月1日起在全国门店上市\n价格含税。", title="价目表")
    assert "2024年10月1日起在全国门店上市" in answer("E7什么时候上市？", one_list)


def test_a_row_is_quoted_with_its_header_and_without_the_rows_not_asked_about():
    """「车架保修几年？」: one header, then the 车架 row; not the header glued to it as text, not the 控制器 row."""
    got = answer("车架保修几年？", cand(1, WARRANTY, chunk_type="table", section_path=("售后服务", "保修期限")))
    assert got == "| 部件 | 保修期 | 说明 |\n| --- | --- | --- |\n| 车架 | 3年 | 非人为断裂免费更换[1] |"
    both = answer("车架和锂电池各保修几年？", cand(1, WARRANTY, chunk_type="table"))
    assert both == ("| 部件 | 保修期 | 说明 |\n| --- | --- | --- |\n| 车架 | 3年 | 非人为断裂免费更换 |\n"
                    "| 锂电池 | 2年 | 容量低于70%免费更换[1] |")
    assert gfm_tables(both) == [[["部件", "保修期", "说明"], ["车架", "3年", "非人为断裂免费更换"],
                                 ["锂电池", "2年", "容量低于70%免费更换[1]"]]]


def test_an_announced_table_brings_only_the_rows_asked_about_when_the_question_names_one():
    text = "各部件的保修期限如下：\n" + WARRANTY
    got = answer("控制器的保修期限是多久？", cand(1, text))
    assert got == "各部件的保修期限如下：\n\n| 部件 | 保修期 | 说明 |\n| --- | --- | --- |\n| 控制器 | 1年 | 进水损坏不保修[1] |"


def test_the_row_holding_a_setting_s_default_is_chosen_over_the_header_row():
    """「sendMsgTimeout 默认值」: the header holds 默认值, the row holds sendMsgTimeout; the row is read with its header."""
    table = ("| 名称 | 描述 | 参数类型 | 默认值 |\n| --- | --- | --- | --- |\n"
             "| producerGroup | 生产组的名称 | String | DEFAULT_PRODUCER |\n"
             "| sendMsgTimeout | 默认的发送超时时间 | int | 3000，单位毫秒 |\n| maxMessageSize | 允许发送的最大消息体大小 | int | 4M |")
    got = answer("sendMsgTimeout 默认值", cand(1, table, chunk_type="table"))
    assert got == ("| 名称 | 描述 | 参数类型 | 默认值 |\n| --- | --- | --- | --- |\n"
                   "| sendMsgTimeout | 默认的发送超时时间 | int | 3000，单位毫秒[1] |")


def test_a_code_block_holding_the_default_is_quoted_whole():
    text = ("DefaultMQProducer 的常用参数及其默认值：\nproducer.setProducerGroup(\"DEFAULT_PRODUCER\");\n"
            "producer.setRetryTimesWhenSendFailed(2);\nproducer.setSendMsgTimeout(3000);\n"
            "其他参数见客户端配置一节。")
    got = answer("sendMsgTimeout 默认值是多少", cand(1, text, section_path=("生产者",)))
    assert "producer.setRetryTimesWhenSendFailed(2);\nproducer.setSendMsgTimeout(3000);" in got
    config = ("开启 ACL 需要修改 broker 的配置。\nbrokerClusterName=DefaultCluster\nbrokerName=broker-a\n"
              "aclEnable=true\nlistenPort=10911\n修改后重启 Broker 生效。")
    got = answer("怎么开启 ACL", cand(1, config))
    assert got.startswith("开启 ACL 需要修改 broker 的配置。\nbrokerClusterName=DefaultCluster\nbrokerName=broker-a\n"
                          "aclEnable=true\nlistenPort=10911")
    # A configuration longer than a quoted code part: the announcing sentence brings the part holding the setting.
    long_config = ("这里贴出 Broker 端开启 ACL 特性的配置文件内容：\n" + "\n".join(f"storePathRootDir{i}=/data/rocketmq/store-{i}"
                   for i in range(6)) + "\n## if acl is open, the flag will be true\naclEnable=true\nlistenPort=10911")
    got = answer("怎么开启 ACL", cand(1, long_config))
    assert got.startswith("这里贴出 Broker 端开启 ACL 特性的配置文件内容：\n…\n") and "aclEnable=true" in got
    assert "storePathRootDir0" not in got


def test_what_the_question_asks_for_in_manuals_price_lists_and_policies():
    assert question_asks("充电要多长时间？") == "duration" and question_asks("车架保修几年？") == "duration"
    assert question_asks("E7多少钱") == "price" and question_asks("E7的价格是多少") == "price"
    assert question_asks("E7什么时候上市？") == "date" and question_asks("过期文件几点删") == "time"
    assert question_asks("sendMsgTimeout 默认值") == "value" and question_asks("dLegerSelfId 填什么") == "value"
    assert holds("duration", "6至8小时") and holds("duration", "10s") and not holds("duration", "2024年10月1日")
    assert holds("price", "3999元") and not holds("price", "3999 台")
    assert holds("value", "aclEnable=true") and holds("value", "默认 3000") and not holds("value", "视情况而定")
    assert holds("time", "凌晨4点") and not holds("time", "每天")
