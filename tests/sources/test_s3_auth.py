"""Credentials against moto's S3 server with its IAM checks on (tests/sources/s3_server.py, require_auth).

A key moto does not know is ``source_auth_failed`` (InvalidAccessKeyId), as is a known key with the wrong
secret (SignatureDoesNotMatch); a valid key whose policy does not cover the bucket is ``s3_access_denied``;
the same key reads the bucket its policy names, and an object its policy denies is one failed item.
"""
from __future__ import annotations

import pytest

from sources.kinds.base import Failed, Fetched, Limits, ScanResult, SourceError, connector_for
from tests.sources.s3_server import client, moto_server, reader_keys, require_auth


@pytest.fixture(scope="module")
def guarded():
    with moto_server() as url:
        s3 = client(url)
        for bucket in ("team-open", "team-closed"):
            s3.create_bucket(Bucket=bucket)
            s3.put_object(Bucket=bucket, Key="a.md", Body="# 可读\n".encode())
            s3.put_object(Bucket=bucket, Key="secret/b.md", Body="# 不可读\n".encode())
        keys = reader_keys(url, "team-open")
        with require_auth(url):
            yield url, keys


@pytest.fixture(autouse=True)
def private(settings):
    settings.ZHIKU_SOURCES_ALLOW_PRIVATE = True


def scan(endpoint, bucket, credentials):
    connector = connector_for("s3")({"bucket": bucket, "endpoint_url": endpoint}, credentials, limits=Limits())
    try:
        return list(connector.scan({}, ScanResult(), lambda: False))
    finally:
        connector.close()


def test_the_reader_key_reads_its_bucket(guarded):
    endpoint, keys = guarded
    items = scan(endpoint, "team-open", keys)
    assert [(type(i), i.key) for i in items] == [(Fetched, "a.md"), (Failed, "secret/b.md")]
    assert items[0].data == "# 可读\n".encode()
    # one object the policy denies is a failed item; the run goes on
    assert items[1].code == "s3_object_unreadable" and "AccessDenied" in items[1].message


def test_bucket_outside_the_policy_is_access_denied(guarded):
    endpoint, keys = guarded
    with pytest.raises(SourceError) as caught:
        scan(endpoint, "team-closed", keys)
    assert caught.value.code == "s3_access_denied"


# Unsigned requests are left out here: moto's IAM check answers them with a 500 (it expects an Authorization
# header) where S3 answers 403 AccessDenied; test_s3_scan.py reads a bucket without keys while checks are off.
@pytest.mark.parametrize("which", ["unknown key", "wrong secret"])
def test_refused_keys_are_auth_failures(guarded, which):
    endpoint, keys = guarded
    credentials = {"unknown key": {"access_key_id": "AKIAUNKNOWNUNKNOWN00", "secret_access_key": "x"},
                   "wrong secret": {**keys, "secret_access_key": "not-the-secret"}}[which]
    with pytest.raises(SourceError) as caught:
        scan(endpoint, "team-open", credentials)
    assert caught.value.code == "source_auth_failed"
    assert "not-the-secret" not in caught.value.message
