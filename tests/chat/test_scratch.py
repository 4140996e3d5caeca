import time, pytest
from knowledge.services.search import search_run, result_payload

DOCS = {
 "pro.md": "# 知库专业版\n\n## 功能\n\n知库专业版支持多知识库检索、混合检索和命中测试。专业版还提供审计日志与单点登录。\n\n## 价格\n\n知库专业版的价格为每年 9800 元，包含 20 个用户席位。超出的席位每个每年 300 元。\n",
 "install.md": "# 安装指南\n\n## 系统要求\n\n需要 Python 3.11 和 PostgreSQL 16。内存至少 4 GB。\n\n## 安装步骤\n\n运行 make run 即可启动。首次启动会创建管理员账户。\n",
}

@pytest.mark.django_db(transaction=True)
def test_x(alice, kb, ingest):
    t=time.time(); ingest(kb, DOCS); print("ingest", time.time()-t)
    for q in ["知库专业版有哪些功能？", "知库专业版 价格", "那它的价格呢？", "如何安装", "今天天气怎么样", "火星上的首都是哪里"]:
        t=time.time(); r = search_run(user=alice, query=q, kb_ids=[kb.pk]); 
        print(q, r.hit, r.relevance, [(c.title, c.section_path, round(c.relevance or 0,3)) for c in r.candidates][:4], round(time.time()-t,3))
    from knowledge.retrieval.analysis import get_analyzer
    a = get_analyzer()
    for q in ["知库专业版有哪些功能？", "那它的价格呢？", "其价格", "应该怎么办", "如何安装知库"]:
        print(q, a.tokenize(q))
