#!/usr/bin/env bash
# Make sure OCR can run: RapidOCR (a PyPI package, models inside) imports OpenCV, whose wheel needs the system's
# libGL and GLib; the OCR tests draw Chinese text with Debian's fonts-wqy-zenhei. Installs what is missing (as root).
set -euo pipefail
PY=${1:-.venv/bin/python}
need=()
if ! "$PY" -c "import cv2" >/dev/null 2>&1; then need+=(libgl1 libglib2.0-0); fi
if [ ! -e /usr/share/fonts/truetype/wqy/wqy-zenhei.ttc ]; then need+=(fonts-wqy-zenhei); fi
if [ ${#need[@]} = 0 ]; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing ${need[*]} from Debian's packages (for OCR)" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  "$PY" -c "import cv2" || { echo "OpenCV still does not import; OCR of scans and images will fail" >&2; exit 1; }
else
  echo "missing ${need[*]} and apt-get is not usable here: OCR of scans and images will fail" >&2
fi
