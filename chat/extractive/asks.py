"""What a question asks for (a value, a price, a duration, a date, a name…) and whether a text holds it."""
from __future__ import annotations

import re

_NUMBER_RE = re.compile(r"\d|[零一二两三四五六七八九十百千万亿]+(?:个|台|套|节点|周|分钟|秒钟|行|页|年|月|日|天|人|名|次|位|种|座|条|米|里|"
                        r"公里|千米|平方|元|岁|倍|成|分|秒|小时|世纪|届|代|层|部|本|首|场|项|家|所|只|头|吨|克|件|支|队|省|县|国)|百分之")
_DATE_RE = re.compile(r"\d{1,4}\s*年|[零〇一二三四五六七八九十]{2,4}年|\d{1,2}\s*月|\d{1,2}\s*[日号]|[一二三四五六七八九十]{1,3}月|"
                      r"世纪|年代|年间|时期|朝|元年|初|末|期间|春|夏|秋|冬|周[一二三四五六日天]|星期[一二三四五六日天]|\d{1,2}:\d{2}")
_PLACE_RE = re.compile(r"[省市县区州国岛山河江湖海洋洲城镇村路街港湾峡谷原岸]|位于|在.{1,12}(?:的|附近|一带|境内)")
_PERSON_RE = re.compile(r"[\u4e00-\u9fff]{2,4}(?:先生|女士|教授|博士|皇帝|国王|总统|主席|将军)|"
                        r"由[\u4e00-\u9fff]{2,4}(?:所|于|在|创|建|发|设|提|编|撰|执)|[·•][\u4e00-\u9fff]")

# What the question asks for, by its words (checked in this order). The first five are what people ask of manuals,
# price lists and policies: a setting's value, a price, a duration, a time of day; then the kinds CMRC/DRCD questions
# ask for (a date, a number, a place, a person).
_ASKS = (
    ("value", re.compile(r"默认值|默认是|默认为|缺省值|默认(?:的)?(?:端口|目录|路径|大小|地址|配置|设置|参数)|填什么|填多少|填写什么|"
                         r"设(?:为|成|置为|置成)?(?:多大|多少|什么|几)|取值|配置(?:成|为)?什么|值是多少|值为多少|建议值|是什么值")),
    ("price", re.compile(r"多少钱|价格|售价|价钱|报价|费用|收费|多少元|几块钱|贵不贵|花多少")),
    ("duration", re.compile(r"多久|多长时间|多长的时间|多少时间|几年|几个月|几天|几周|几个?小时|几分钟|几秒|多少年|多少天|多少个?月|"
                            r"多少个?小时|多少分钟|多少秒|时长|期限|保修期|有效期")),
    ("time", re.compile(r"几点|什么时间点|几时")),
    ("date", re.compile(r"何时|什么时候|什么时间|哪一?年|何年|几几年|哪个?年代|哪一?天|几月|几号|哪个?月|何日|年份|日期|"
                        r"哪个?世纪|哪个?朝代|哪个时期")),
    ("number", re.compile(r"多少|几[个次位名种岁年天条座人倍件只家所项届部本首场万千百十]|多[大长高重远久深宽厚快]|第几|百分之几|几成|"
                          r"多少钱|人口|面积|数量")),
    ("place", re.compile(r"哪里|哪儿|何处|何地|在哪|什么地方|哪个?(?:国家|城市|省|地区|地方|州|县|岛|大洲|洲)|哪国|位于")),
    ("person", re.compile(r"谁|哪位|何人|什么人|哪个人|名字|叫什么")),
)
_DURATION_RE = re.compile(r"(?<!\d)\d{1,3}(?:\.\d+)?\s*(?:年|个月|周|星期|天|个?小时|分钟|秒|毫秒|个?工作日|日(?:内|以内|之内))|"
                          r"\d+(?:\.\d+)?\s*(?:ms|min|h|s)(?![a-z])|"
                          r"[零一二两三四五六七八九十百半]+(?:年|个月|个星期|周|天|个?小时|分钟|秒)|终身|永久")
_PRICE_RE = re.compile(r"\d[\d,.]*\s*(?:元|块|万元|美元|港币|欧元)|[¥￥$]\s*\d")
_TIME_RE = re.compile(r"\d{1,2}\s*(?:点|时)|\d{1,2}:\d{2}|凌晨|上午|下午|晚上|中午|早上")
_SETTING_RE = re.compile(r"\d|\b(?:true|false|null|none|on|off|yes|no|enabled?|disabled?)\b|[A-Z][A-Z0-9]*_[A-Z0-9_]+|"
                         r"\w=\S|/[\w.{}~-]+/|「[^」]+」|“[^”]+”|`[^`]+`", re.IGNORECASE)


_LIST_RE = re.compile(r"有哪些|哪几|哪些|步骤|流程|几个步骤|包括什么|包含什么|分为|几种|几类|列出")


def question_asks(question: str) -> str | None:
    """What kind of thing the question asks for: value, price, duration, time, date, number, place, person, or None."""
    for kind, pattern in _ASKS:
        if pattern.search(question):
            return kind
    return None


def is_list_question(question: str) -> bool:
    return bool(_LIST_RE.search(question))


def holds(kind: str | None, text: str) -> bool:
    """Whether ``text`` holds the kind of thing asked for."""
    if kind == "value":
        return bool(_SETTING_RE.search(text))
    if kind == "price":
        return bool(_PRICE_RE.search(text))
    if kind == "duration":
        return bool(_DURATION_RE.search(text))
    if kind == "time":
        return bool(_TIME_RE.search(text))
    if kind == "date":
        return bool(_DATE_RE.search(text))
    if kind == "number":
        return bool(_NUMBER_RE.search(text))
    if kind == "place":
        return bool(_PLACE_RE.search(text))
    if kind == "person":
        return bool(_PERSON_RE.search(text))
    return False
