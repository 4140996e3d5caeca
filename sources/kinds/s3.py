"""Kind "s3": the objects under a prefix of an S3-compatible bucket, by ETag (docs/sources/s3.md).

AWS S3, MinIO, Alibaba OSS, Tencent COS and any other service speaking the S3 API (given its endpoint URL). A scan
lists the prefix with ListObjectsV2 page by page, compares each object's ETag with what the previous run kept, and
downloads only new and changed objects (GetObject), each checked against the byte cap before and while it is read.
boto3, AWS's own SDK, signs the requests, pages, retries and reads every service's error body.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar
from urllib.parse import quote, urlsplit

import boto3
from botocore import UNSIGNED
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from django.utils.translation import gettext_lazy as _

import sources.kinds.s3_errors  # noqa: F401 - registers the codes this kind raises
from core.net import netguard
from sources.kinds import field_checks as fields
from sources.kinds.base import Failed, Fetched, Item, Known, Limits, ScanResult, SettingField, SourceError, Unchanged, register

_BUCKET = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$")
_AUTH_CODES = {"InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken", "ExpiredToken", "InvalidClientTokenId",
               "AuthorizationHeaderMalformed", "InvalidSecurity"}
_DENIED_CODES = {"AccessDenied", "AllAccessDisabled", "AccountProblem"}


def source_error(exc: Exception) -> SourceError:
    """The source-wide error an S3 failure means."""
    if isinstance(exc, ClientError):
        code = exc.response.get("Error", {}).get("Code", "")
        text = exc.response.get("Error", {}).get("Message", "") or str(exc)
        if code == "NoSuchBucket":
            return SourceError("s3_bucket_not_found", f"NoSuchBucket: {text}")
        if code in _AUTH_CODES:
            return SourceError("source_auth_failed", f"{code}: {text}")
        if code in _DENIED_CODES or exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") == 403:
            return SourceError("s3_access_denied", f"{code or 'AccessDenied'}: {text}")
        return SourceError("s3_failed", f"{code}: {text}")
    return SourceError("source_unreachable", f"the bucket's endpoint did not answer: {exc}")


def normalise_etag(etag: str) -> str:
    """An ETag without its quotes (RFC 9110 §8.8.3: ``"..."``, or ``W/"..."`` when weak)."""
    etag = etag.strip()
    if etag.startswith("W/"):
        etag = etag[2:]
    return etag.strip('"')


@register
class S3Connector:
    kind: ClassVar[str] = "s3"
    secret_fields: ClassVar[tuple[str, ...]] = ("access_key_id", "secret_access_key", "session_token")
    fields: ClassVar[tuple[SettingField, ...]] = (
        SettingField("bucket", _("Bucket"), required=True),
        SettingField("prefix", _("Prefix"), help=_("Only keys that start with this, e.g. policies/; empty: the whole bucket.")),
        SettingField("endpoint_url", _("Endpoint URL"), type="url",
                     help=_("For MinIO, OSS, COS and other S3-compatible services; empty: AWS S3.")),
        SettingField("region", _("Region"), default="us-east-1"),
        SettingField("addressing_style", _("Addressing style"),
                     help=_("path (MinIO), virtual (OSS, COS) or auto; empty: path with an endpoint URL.")),
        SettingField("extensions", _("File extensions"), type="lines",
                     help=_("One a line (md, txt); empty: every type the knowledge base reads.")),
        SettingField("browse_url", _("Browse URL"), help=_("A public address of the bucket where readers open objects.")),
        SettingField("access_key_id", _("Access key ID"), type="secret"),
        SettingField("secret_access_key", _("Secret access key"), type="secret"),
        SettingField("session_token", _("Session token (temporary keys)"), type="secret"),
    )

    @classmethod
    def clean_settings(cls, settings: Mapping[str, Any]) -> dict[str, Any]:
        bucket = fields.text(settings, "bucket", limit=255)
        if not _BUCKET.match(bucket):
            raise fields.invalid("bucket: the bucket's name, such as team-docs")
        endpoint = fields.text(settings, "endpoint_url").rstrip("/")
        if endpoint:
            try:
                _check_endpoint_shape(endpoint)
            except SourceError as exc:
                raise fields.invalid(f"endpoint_url: {exc.message}") from None
        style = fields.text(settings, "addressing_style", "path" if endpoint else "auto", 20) or "auto"
        if style not in ("auto", "path", "virtual"):
            raise fields.invalid("addressing_style: path, virtual or auto")
        page_size = settings.get("page_size", 1000)
        if isinstance(page_size, str) and page_size.strip().isdigit():
            page_size = int(page_size)
        if not isinstance(page_size, int) or isinstance(page_size, bool) or not 1 <= page_size <= 1000:
            raise fields.invalid("page_size: a number from 1 to 1000")
        return {"bucket": bucket, "prefix": fields.text(settings, "prefix", limit=1024).lstrip("/"),
                "endpoint_url": endpoint, "region": fields.text(settings, "region", "us-east-1", 64) or "us-east-1",
                "addressing_style": style, "page_size": page_size, "extensions": fields.extensions(settings),
                "browse_url": fields.browse_base(settings).rstrip("/")}

    @classmethod
    def check_address(cls, settings: Mapping[str, Any]) -> None:
        """When the source is added or changed: a private endpoint is refused then (netguard.check_when_added)."""
        if settings.get("endpoint_url"):
            netguard.check_when_added(settings["endpoint_url"])

    def __init__(self, settings: Mapping[str, Any], credentials: Mapping[str, str], *, limits: Limits) -> None:
        self.settings = self.clean_settings(settings)
        self.credentials = credentials
        self.limits = limits
        self.client: Any = None      # a boto3 S3 client once _client() made it (boto3 ships no types)

    def _client(self) -> Any:
        endpoint = self.settings["endpoint_url"]
        if endpoint:
            netguard.check_url(endpoint)
        anonymous = not self.credentials.get("access_key_id")
        # No keys: an anonymous (unsigned) client for a public bucket. The placeholder keys are never used to sign;
        # they keep boto3 from its own credential chain, which would lend an owner the server's environment keys
        # or instance role (and call the metadata service).
        keys = {"aws_access_key_id": "anonymous", "aws_secret_access_key": "anonymous"} if anonymous else {
            "aws_access_key_id": self.credentials["access_key_id"],
            "aws_secret_access_key": self.credentials.get("secret_access_key", ""),
            "aws_session_token": self.credentials.get("session_token") or None}
        config = Config(connect_timeout=self.limits.timeout_s, read_timeout=self.limits.timeout_s,
                        retries={"max_attempts": 2, "mode": "standard"},
                        s3={"addressing_style": self.settings["addressing_style"]},
                        **({"signature_version": UNSIGNED} if anonymous else {}))
        self.client = boto3.session.Session().client("s3", endpoint_url=endpoint or None,
                                                     region_name=self.settings["region"], config=config, **keys)
        return self.client

    def _objects(self, result: ScanResult) -> Iterator[dict]:
        """Every object under the prefix, page by page; a page failing after the first cuts the scan short."""
        paginator = (self.client or self._client()).get_paginator("list_objects_v2")
        pages = paginator.paginate(Bucket=self.settings["bucket"], Prefix=self.settings["prefix"],
                                   PaginationConfig={"PageSize": self.settings["page_size"]})
        first = True
        try:
            for page in pages:
                first = False
                yield from page.get("Contents", [])
        except (ClientError, BotoCoreError) as exc:
            if first:
                raise source_error(exc) from None
            result.complete = False
            result.note = f"the listing stopped: {source_error(exc).message}"

    def scan(self, known: Mapping[str, Known], result: ScanResult, cancelled: Callable[[], bool]) -> Iterator[Item]:
        extensions = tuple(self.settings["extensions"])
        count = 0
        for obj in self._objects(result):
            key = obj["Key"]
            if key.endswith("/") or not key.lower().endswith(extensions):
                continue          # a "folder" marker, or a type the parsers do not read
            if cancelled():
                result.complete = False
                result.note = "cancelled"
                return
            count += 1
            if count > self.limits.max_items:
                result.complete = False
                result.note = f"stopped at the limit of {self.limits.max_items} objects"
                return
            etag = normalise_etag(obj.get("ETag", ""))
            if key in known and etag and known[key].revision == etag:
                yield Unchanged(key)
            else:
                yield self._read(key, int(obj.get("Size", 0)))
        if result.complete:
            result.note = f"{count} objects under s3://{self.settings['bucket']}/{self.settings['prefix']}"

    def _url(self, key: str) -> str:
        if self.settings["browse_url"]:
            return f"{self.settings['browse_url']}/{quote(key)}"
        return f"s3://{self.settings['bucket']}/{key}"

    def _read(self, key: str, size: int) -> Item:
        url, cap = self._url(key), self.limits.max_bytes_per_item
        if size > cap:
            return Failed(key, "s3_object_too_large", f"{key} is {size} bytes; the limit is {cap}", url=url)
        try:
            answer = self.client.get_object(Bucket=self.settings["bucket"], Key=key)
            body = answer["Body"]
            try:
                if int(answer.get("ContentLength") or 0) > cap:
                    return Failed(key, "s3_object_too_large", f"{key} grew over the limit of {cap} bytes", url=url)
                data = body.read(cap + 1)
            finally:
                body.close()
        except (ClientError, BotoCoreError) as exc:
            return Failed(key, "s3_object_unreadable", source_error(exc).message, url=url)
        if len(data) > cap:
            return Failed(key, "s3_object_too_large", f"{key} grew over the limit of {cap} bytes", url=url)
        return Fetched(key=key, revision=normalise_etag(answer.get("ETag", "")), name=key, data=data, url=url,
                       state={"etag": normalise_etag(answer.get("ETag", "")), "size": len(data)})

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None


def _check_endpoint_shape(endpoint: str) -> None:
    """The endpoint's scheme and port (its address is checked when the scan connects, netguard.check_url)."""
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SourceError("source_url_invalid", "the address must start with https:// or http://")
    try:
        _ = parts.port      # reading it raises ValueError for a port that is no number in 0-65535
    except ValueError:
        raise SourceError("source_url_invalid", "the address has an invalid port") from None
    if parts.username or parts.password or parts.query or parts.fragment:
        raise SourceError("source_url_invalid", "give only the scheme, host, port (and path) of the endpoint")
