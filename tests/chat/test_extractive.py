"""Extractive answers (no LLM): the answer-bearing sentence, headings, FAQ scaffolding, lists, the source floor."""
from __future__ import annotations

from chat.extractive import extractive_answer, holds, is_list_question, question_asks
from chat.prompts import answer_candidates, context_build
from knowledge.retrieval.types import Candidate


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
    text = ("第九条 出差城市分为三类，一类城市为北京、上海、广州、深圳。\n第十条 员工出差住宿费实行限额报销，每人每晚标准如下（单位：元）：\n"
            "| 职级 | 一类城市 | 二类城市 |\n| --- | --- | --- |\n| 总监 | 700 | 550 |\n| 经理 | 550 | 450 |\n"
            "第十一条 超出标准部分由个人承担。")
    got = answer("出差住宿每晚标准是多少？", cand(1, text))
    assert "每人每晚标准如下（单位：元）：\n| 职级 | 一类城市 | 二类城市 |\n| 总监 | 700 | 550 |\n| 经理 | 550 | 450 |" in got
    assert "| --- |" not in got


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
