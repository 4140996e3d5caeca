#!/usr/bin/env bash
# Make sure headless Chromium and its WebDriver are installed, for the chat page's browser test
# (tests/chat/test_chat_browser.py skips with a reason when they are missing), with a CJK font and a colour
# emoji font (the feedback buttons' 👍/👎 show as empty boxes without one).
set -euo pipefail
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1 && fc-list 2>/dev/null | grep -qi "wenquanyi\|noto sans cjk" \
  && fc-list 2>/dev/null | grep -qi "emoji"; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing chromium and chromium-driver from Debian's packages (1-3 minutes)" >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver fonts-wqy-zenhei fonts-noto-color-emoji >/dev/null) \
    || echo "could not install chromium; the browser test will be skipped." >&2
else
  echo "chromium/chromedriver are not installed and apt-get is not usable here; the browser test will be skipped." >&2
fi
exit 0
