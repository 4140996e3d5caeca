#!/usr/bin/env bash
# Make sure legacy Office, RTF, OpenDocument and WPS files can be read: they are converted to DOCX/XLSX/PPTX by
# LibreOffice headless (knowledge/parsers/legacy.py). Installs Debian's LibreOffice without a desktop (as root)
# when soffice is missing. Without it those formats fail with converter_missing; everything else works.
set -euo pipefail
if command -v soffice >/dev/null 2>&1 || command -v libreoffice >/dev/null 2>&1 || [ -n "${ZHIKU_SOFFICE:-}" ]; then
  exit 0
fi
need=(libreoffice-writer-nogui libreoffice-calc-nogui libreoffice-impress-nogui)
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing ${need[*]} from Debian's packages (for .doc .xls .ppt .rtf .odt .ods .odp .wps .et .dps)" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  command -v soffice >/dev/null 2>&1 || { echo "soffice is still missing; legacy Office files will fail" >&2; exit 1; }
else
  echo "missing ${need[*]} and apt-get is not usable here: .doc .xls .ppt .rtf .odt .ods .odp .wps .et .dps files will fail (converter_missing)" >&2
fi
