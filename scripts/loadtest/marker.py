"""The document replaced during the load test: version k names only its own marker, 标记k."""
from __future__ import annotations

import re

MARKER = re.compile(r"标记(\d+)")
# Small chunks, so that one result list holds several chunks of the document and a mix of versions would show.
MARKER_CHUNKING = {"chunk_size": "150", "chunk_overlap": "0"}


def marker_document(version: int) -> bytes:
    """Version ``version`` of the replaced document: several sections, each naming only its own marker."""
    sections = [f"# 产品版本说明 标记{version}\n"]
    topics = ["安装步骤", "升级注意事项", "已知问题", "兼容性", "数据迁移", "回滚方法"]
    for i, topic in enumerate(topics, 1):
        sections.append(f"## 第{i}节 {topic}\n\n本节属于版本标记{version}。标记{version} 的{topic}说明："
                        f"请按照标记{version}版本的要求操作，第{i}项检查完成后再继续。"
                        f"版本标记{version}适用于全部部署环境，如有疑问请联系运维值班人员。\n")
    return "\n".join(sections).encode()
