"""The S3 connector against moto's S3 server on loopback, through boto3 (sources/kinds/s3.py).

Objects are put, scanned, overwritten, added and deleted, and scanned again with what the first scan kept:
only new and changed objects are downloaded; "folders", other types and objects outside the prefix are
skipped; a listing of several pages (page_size 2) is read to its end.
"""
from __future__ import annotations

import pytest

from sources.kinds.base import Failed, Fetched, Known, Limits, ScanResult, SourceError, Unchanged, connector_for
from sources.kinds.s3 import normalise_etag
from tests.sources.s3_server import KEYS, client, moto_server

BUCKET = "kb-docs"


@pytest.fixture(scope="module")
def endpoint():
    with moto_server() as url:
        s3 = client(url)
        s3.create_bucket(Bucket=BUCKET)
        objects = {"docs/readme.md": "# 说明\n\n第一版的内容。\n", "docs/guide/setup.md": "# 安装\n\n步骤一。\n",
                   "docs/guide/faq.txt": "常见问题\n", "docs/folder/": "", "docs/logo.bin": "binary",
                   "docs/big.md": "大" * 2000, "other/outside.md": "# 不在前缀里\n"}
        for key, body in objects.items():
            s3.put_object(Bucket=BUCKET, Key=key, Body=body.encode())
        yield url


@pytest.fixture(autouse=True)
def private(settings):
    settings.ZHIKU_SOURCES_ALLOW_PRIVATE = True


SMALL_ITEMS = Limits(max_bytes_per_item=4096)


def scan(settings, known=None, *, credentials=KEYS, limits=SMALL_ITEMS, cancel=lambda: False):
    connector = connector_for("s3")(settings, credentials, limits=limits)
    result = ScanResult()
    try:
        return list(connector.scan(known or {}, result, cancel)), result
    finally:
        connector.close()


def sort(items):
    return ({i.key: i for i in items if isinstance(i, Fetched)}, {i.key for i in items if isinstance(i, Unchanged)},
            {i.key: i for i in items if isinstance(i, Failed)})


def test_scan_change_scan_again_over_pages(endpoint):
    settings = {"bucket": BUCKET, "prefix": "docs/", "endpoint_url": endpoint, "page_size": 2}
    items, result = scan(settings)
    fetched, unchanged, failed = sort(items)
    assert set(fetched) == {"docs/readme.md", "docs/guide/setup.md", "docs/guide/faq.txt"}
    assert set(failed) == {"docs/big.md"} and failed["docs/big.md"].code == "s3_object_too_large"
    readme = fetched["docs/readme.md"]
    head = client(endpoint).head_object(Bucket=BUCKET, Key="docs/readme.md")
    assert readme.revision == head["ETag"].strip('"') and '"' not in readme.revision
    assert readme.data.decode() == "# 说明\n\n第一版的内容。\n"
    assert readme.url == f"s3://{BUCKET}/docs/readme.md" and readme.name == "docs/readme.md"
    assert result.complete and not unchanged

    s3 = client(endpoint)
    s3.put_object(Bucket=BUCKET, Key="docs/readme.md", Body="# 说明\n\n第二版的内容。\n".encode())
    s3.put_object(Bucket=BUCKET, Key="docs/new.md", Body="# 新的\n".encode())
    s3.delete_object(Bucket=BUCKET, Key="docs/guide/setup.md")
    known = {i.key: Known(i.revision, dict(i.state)) for i in fetched.values()}
    items, result = scan(settings, known)
    fetched, unchanged, failed = sort(items)
    assert set(fetched) == {"docs/readme.md", "docs/new.md"}
    assert unchanged == {"docs/guide/faq.txt"}
    assert set(failed) == {"docs/big.md"}
    assert "docs/guide/setup.md" not in set(fetched) | unchanged | set(failed)      # removed by the runner
    assert "第二版" in fetched["docs/readme.md"].data.decode() and fetched["docs/readme.md"].revision != readme.revision
    assert result.complete


def test_whole_bucket_browse_url_and_extensions(endpoint):
    items, _ = scan({"bucket": BUCKET, "endpoint_url": endpoint, "extensions": ["md"],
                     "browse_url": "https://cdn.example.com/kb"}, limits=Limits())
    urls = {i.key: i.url for i in items}
    assert "other/outside.md" in urls and "docs/guide/faq.txt" not in urls
    assert urls["other/outside.md"] == "https://cdn.example.com/kb/other/outside.md"


def test_no_keys_means_unsigned_requests(endpoint, monkeypatch):
    # Keys in the server's environment must not be lent to an owner who gave none.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIASERVERSERVER0001")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "server-secret")
    connector = connector_for("s3")({"bucket": BUCKET, "prefix": "other/", "endpoint_url": endpoint}, {},
                                    limits=Limits())
    seen = []
    connector._client().meta.events.register("before-send.s3", lambda request, **_: seen.append(request.headers))
    try:
        items = list(connector.scan({}, ScanResult(), lambda: False))
    finally:
        connector.close()
    assert [i.key for i in items] == ["other/outside.md"]
    assert seen and all("Authorization" not in headers for headers in seen)


def test_item_limit_and_cancel(endpoint):
    settings = {"bucket": BUCKET, "prefix": "docs/", "endpoint_url": endpoint, "page_size": 2}
    items, result = scan(settings, limits=Limits(max_items=2))
    assert len(items) == 2 and not result.complete and "limit of 2" in result.note
    items, result = scan(settings, cancel=lambda: True)
    assert items == [] and not result.complete


def test_missing_bucket(endpoint):
    with pytest.raises(SourceError) as caught:
        scan({"bucket": "no-such-bucket", "endpoint_url": endpoint})
    assert caught.value.code == "s3_bucket_not_found"


def test_unreachable_endpoint(endpoint):
    with moto_server() as dead:
        pass
    with pytest.raises(SourceError) as caught:
        scan({"bucket": BUCKET, "endpoint_url": dead}, limits=Limits(timeout_s=2))
    assert caught.value.code == "source_unreachable"


def test_private_endpoint_refused(settings, endpoint):
    settings.ZHIKU_SOURCES_ALLOW_PRIVATE = False
    with pytest.raises(SourceError) as caught:
        scan({"bucket": BUCKET, "endpoint_url": endpoint})
    assert caught.value.code == "source_address_refused"


@pytest.mark.parametrize("settings_given", [
    {"bucket": ""}, {"bucket": "a/b"}, {"bucket": "ok", "endpoint_url": "ftp://minio.example.com"},
    {"bucket": "ok", "endpoint_url": "https://key:secret@minio.example.com"},
    {"bucket": "ok", "addressing_style": "sideways"}, {"bucket": "ok", "page_size": 0},
    {"bucket": "ok", "browse_url": "javascript:alert(1)"},
])
def test_settings_refused(settings_given):
    with pytest.raises(SourceError) as caught:
        connector_for("s3").clean_settings(settings_given)
    assert caught.value.code == "source_settings_invalid"


def test_settings_defaults():
    cleaned = connector_for("s3").clean_settings({"bucket": "team-docs", "endpoint_url": "https://oss.example.com/",
                                                   "page_size": "50"})
    assert cleaned["addressing_style"] == "path" and cleaned["region"] == "us-east-1"
    assert cleaned["endpoint_url"] == "https://oss.example.com" and cleaned["page_size"] == 50
    assert connector_for("s3").clean_settings({"bucket": "b"})["addressing_style"] == "auto"


def test_etag_normalised():
    assert normalise_etag('"9b2cf535f27731c974343645a3985328"') == "9b2cf535f27731c974343645a3985328"
    assert normalise_etag('W/"abc-2"') == "abc-2"
