"""Compile every locale/*/LC_MESSAGES/*.po (and each app's <app>/locale/…) into its .mo, in pure Python (no system gettext needed).

``make migrate`` (so ``make run`` and ``make test``) and the test suite's start run it; it
rewrites a .mo only when its .po is newer. Django's ``compilemessages`` would do the same
but needs GNU gettext's ``msgfmt``, which a fresh machine may lack (docs/i18n.md).

    python scripts/compile_messages.py [--force] [--check]

``--check`` compiles nothing and exits 1 when a .mo is missing or older than its .po.

Parts: every ``*.po.part`` next to an app's ``django.po`` (plain .po entries, no header) is merged into
that catalogue's ``django.mo``; so several people adding one app's messages at once (each kind of
source keeps its own ``sources/locale/zh_Hans/LC_MESSAGES/<kind>.po.part``) never edit one file. An id
in both keeps the ``django.po`` translation.
"""
from __future__ import annotations

import argparse
import ast
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCALE_DIR = ROOT / "locale"


def _unquote(text: str, where: str) -> str:
    text = text.strip()
    if not (len(text) >= 2 and text[0] == text[-1] == '"'):
        raise ValueError(f"{where}: expected a quoted string, got {text!r}")
    # A .po string is a C string: the escapes Python's literal syntax reads the same way.
    return ast.literal_eval(text)


def parse_po(path: Path) -> dict[str, str]:
    """{msgid (with msgctxt and plural joined as gettext's .mo stores them): msgstr}, fuzzy and empty ones left out."""
    # long because: one state machine over the .po lines (msgctxt, msgid, plurals, msgstr, continued strings)
    messages: dict[str, str] = {}
    entry: dict[str, object] = {}
    fuzzy = False
    section: tuple[str, int | None] | None = None

    def finish() -> None:
        nonlocal entry, fuzzy
        # The header (msgid "") is kept even when fuzzy: it carries the charset and plural forms.
        if "msgid" in entry and (not fuzzy or entry["msgid"] == ""):
            msgid = entry["msgid"]
            if "msgid_plural" in entry:
                msgid = f"{msgid}\0{entry['msgid_plural']}"
                forms = entry.get("plural", {})
                msgstr = "\0".join(forms[i] for i in sorted(forms))
            else:
                msgstr = entry.get("msgstr", "")
            if "msgctxt" in entry:
                msgid = f"{entry['msgctxt']}\x04{msgid}"
            if msgstr.replace("\0", "") or msgid == "":
                messages[msgid] = msgstr
        entry, fuzzy = {}, False

    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        where = f"{path}:{number}"
        if not line:
            continue
        if line.startswith("#"):
            if "msgid" in entry and ("msgstr" in entry or "plural" in entry):
                finish()  # the comments of the next entry
            if line.startswith("#,") and "fuzzy" in line:
                fuzzy = True
            continue
        if line.startswith("msgctxt "):
            if "msgid" in entry:
                finish()
            entry["msgctxt"] = _unquote(line[8:], where)
            section = ("msgctxt", None)
        elif line.startswith("msgid_plural "):
            entry["msgid_plural"] = _unquote(line[13:], where)
            section = ("msgid_plural", None)
        elif line.startswith("msgid "):
            if "msgid" in entry:
                finish()
            entry["msgid"] = _unquote(line[6:], where)
            section = ("msgid", None)
        elif line.startswith("msgstr["):
            index = int(line[7:line.index("]")])
            entry.setdefault("plural", {})[index] = _unquote(line[line.index("]") + 1:], where)
            section = ("plural", index)
        elif line.startswith("msgstr "):
            entry["msgstr"] = _unquote(line[7:], where)
            section = ("msgstr", None)
        elif line.startswith('"') and section is not None:
            key, index = section
            if key == "plural":
                entry["plural"][index] += _unquote(line, where)
            else:
                entry[key] += _unquote(line, where)
        else:
            raise ValueError(f"{where}: cannot read {raw!r}")
    finish()
    return messages


def mo_bytes(messages: dict[str, str]) -> bytes:
    """GNU .mo (little-endian, revision 0, no hash table), ids sorted as gettext requires."""
    keys = sorted(messages)
    ids = b""
    strs = b""
    offsets = []
    for key in keys:
        k, v = key.encode("utf-8"), messages[key].encode("utf-8")
        offsets.append((len(ids), len(k), len(strs), len(v)))
        ids += k + b"\0"
        strs += v + b"\0"
    count = len(keys)
    key_table = 7 * 4
    value_table = key_table + count * 8
    ids_start = value_table + count * 8
    strs_start = ids_start + len(ids)
    key_entries, value_entries = [], []
    for id_off, id_len, str_off, str_len in offsets:
        key_entries += [id_len, ids_start + id_off]
        value_entries += [str_len, strs_start + str_off]
    header = struct.pack("<7I", 0x950412DE, 0, count, key_table, value_table, 0, 0)
    return (header + struct.pack(f"<{2 * count}I", *key_entries) + struct.pack(f"<{2 * count}I", *value_entries)
            + ids + strs)


def po_files(locale_dir: Path = LOCALE_DIR) -> list[Path]:
    """The project's catalogues, then (for the project's own directory) each app's ``<app>/locale/`` one, which
    Django reads after LOCALE_PATHS: an app keeps its own messages, so parallel work on two apps doesn't edit one file."""
    found = sorted(locale_dir.glob("*/LC_MESSAGES/*.po"))
    if locale_dir == LOCALE_DIR:
        found += sorted(ROOT.glob("*/locale/*/LC_MESSAGES/*.po"))
    return found


def parts_of(po: Path) -> list[Path]:
    """The ``*.po.part`` files merged into ``po``'s catalogue (only a ``django.po`` has parts)."""
    return sorted(po.parent.glob("*.po.part")) if po.name == "django.po" else []


def catalogue(po: Path) -> dict[str, str]:
    """The messages of ``po`` and of its parts (``po`` wins where both translate an id)."""
    messages: dict[str, str] = {}
    for part in parts_of(po):
        messages.update(parse_po(part))
    messages.update(parse_po(po))
    return messages


def stale(po: Path) -> bool:
    mo = po.with_suffix(".mo")
    return not mo.exists() or any(mo.stat().st_mtime < p.stat().st_mtime for p in [po, *parts_of(po)])


def compile_all(*, force: bool = False, locale_dir: Path = LOCALE_DIR, quiet: bool = False) -> list[Path]:
    """Compile the stale (or, with force, every) .po; returns the .mo files written."""
    written = []
    for po in po_files(locale_dir):
        if force or stale(po):
            mo = po.with_suffix(".mo")
            tmp = mo.with_suffix(".mo.tmp")
            tmp.write_bytes(mo_bytes(catalogue(po)))
            tmp.replace(mo)
            written.append(mo)
            if not quiet:
                print(f"compiled {po.relative_to(ROOT) if po.is_relative_to(ROOT) else po}")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="recompile every .po")
    parser.add_argument("--check", action="store_true", help="compile nothing; exit 1 if a .mo is missing or stale")
    args = parser.parse_args(argv)
    if args.check:
        missing = [po for po in po_files() if stale(po)]
        for po in missing:
            print(f"stale or missing: {po.with_suffix('.mo')}")
        return 1 if missing else 0
    compile_all(force=args.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())
