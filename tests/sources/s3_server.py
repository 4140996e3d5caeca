"""moto's S3 server on loopback (``moto.server.ThreadedMotoServer``), reached through boto3 like any endpoint.

moto's server answers the S3 REST API at the wire (signed requests, XML error bodies, ListObjectsV2 pages).
By default it takes any keys; :func:`require_auth` turns on its IAM checks (moto's ``/moto-api/reset-auth``:
after that many unauthenticated requests every request must be signed with a key moto's IAM knows, and is
allowed only by that key's policies) and turns them off again.
"""
from __future__ import annotations

import contextlib
import json
import urllib.request

import boto3
from moto.server import ThreadedMotoServer

KEYS = {"access_key_id": "AKIATESTTESTTEST0001", "secret_access_key": "test-secret"}


@contextlib.contextmanager
def moto_server():
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def client(endpoint: str, service: str = "s3", keys=KEYS):
    return boto3.client(service, endpoint_url=endpoint, region_name="us-east-1",
                        aws_access_key_id=keys["access_key_id"], aws_secret_access_key=keys["secret_access_key"])


def _reset_auth(endpoint: str, count: str) -> None:
    request = urllib.request.Request(f"{endpoint}/moto-api/reset-auth", data=count.encode(), method="POST",
                                     headers={"Content-Type": "text/plain"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert json.load(answer)["status"] == "ok"


@contextlib.contextmanager
def require_auth(endpoint: str):
    _reset_auth(endpoint, "0")
    try:
        yield
    finally:
        _reset_auth(endpoint, "inf")


def reader_keys(endpoint: str, bucket: str) -> dict[str, str]:
    """An IAM user of moto's whose only policy lets it list and read ``bucket`` (but no key under ``secret/``);
    its new access key.

    AWS checks ListObjectsV2 against ``s3:ListBucket``; moto 5.2 checks it against the operation's own name,
    ``s3:ListObjectsV2``, so the policy grants both (neither reaches beyond ``bucket``).
    """
    iam = client(endpoint, "iam")
    iam.create_user(UserName="reader")
    policy = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": ["s3:ListBucket", "s3:ListObjectsV2"], "Resource": f"arn:aws:s3:::{bucket}"},
        {"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": f"arn:aws:s3:::{bucket}/*"},
        {"Effect": "Deny", "Action": ["s3:GetObject"], "Resource": f"arn:aws:s3:::{bucket}/secret/*"}]}
    iam.put_user_policy(UserName="reader", PolicyName="read-one-bucket", PolicyDocument=json.dumps(policy))
    key = iam.create_access_key(UserName="reader")["AccessKey"]
    return {"access_key_id": key["AccessKeyId"], "secret_access_key": key["SecretAccessKey"]}
