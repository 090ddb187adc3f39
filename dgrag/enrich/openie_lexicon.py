"""The offline OpenIE's lexicon: limits, character classes, name normalisation, word lists
and token patterns for technical docs in Chinese and English. Data, no extraction logic."""
from __future__ import annotations

import re
import unicodedata

MAX_ENTITIES = 25
MAX_TRIPLES = 40
MAX_NAME_CHARS = 40          # phrases / CJK terms
MAX_TOPIC_CHARS = 60         # a section topic (a heading)
MAX_IDENT_CHARS = 80         # one identifier (SystemCapability.BundleManager.BundleFramework.Core)
MAX_DESC_CHARS = 160

# --------------------------------------------------------------------------------------
# character classes
# --------------------------------------------------------------------------------------
_CJK_RANGE = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK = re.compile(f"[{_CJK_RANGE}]")
_CJK_RUN = re.compile(f"[{_CJK_RANGE}]+")
_LATIN = re.compile(r"[A-Za-z]")
_WS = re.compile(r"\s+")

# full-width punctuation kept as is in working text (descriptions stay natural Chinese)
_KEEP_FULLWIDTH = set("，：；（）！？【】")

# stripped from both ends of an entity name; brackets are handled by balance (C++ and C# keep theirs)
_EDGE_PUNCT = " \t\r\n'\"`“”‘’「」『』《》〈〉【】,.;:!?，。；：！？、…·*~|=—–-/\\"
_BRACKETS = {"(": ")", "[": "]", "{": "}", "<": ">"}


def _nfkc(text: str) -> str:
    """NFKC everywhere except full-width CJK punctuation (kept for readable descriptions)."""
    if text.isascii():
        return text
    return "".join(ch if ch in _KEEP_FULLWIDTH else unicodedata.normalize("NFKC", ch) for ch in text)


def normalize_entity(name: str) -> str:
    """The entity key: NFKC, no surrounding punctuation/quotes/backticks, single spaces,
    Latin text casefolded (CJK kept as is). A trailing empty call `()` is dropped, so
    `router.pushUrl()` and `router.pushUrl` share a key; `$`/`@` prefixes are kept."""
    s = unicodedata.normalize("NFKC", name or "")
    s = s.replace("\\@", "@").replace("\u200b", "")
    s = _WS.sub(" ", s).strip()
    prev = None
    while s != prev:
        prev = s
        if s.endswith("()") and len(s) > 2:
            s = s[:-2]
        s = s.strip(_EDGE_PUNCT)
        # enclosing or unbalanced brackets
        if len(s) >= 2 and s[0] in _BRACKETS and s[-1] == _BRACKETS[s[0]] and _balanced(s[1:-1]):
            s = s[1:-1]
        while s and s[-1] in ")]}>" and not _balanced(s):
            s = s[:-1]
        while s and s[0] in "([{<" and not _balanced(s):
            s = s[1:]
        while s and s[-1] in "([{<" and not _balanced(s):
            s = s[:-1]
        while s and s[0] in ")]}>" and not _balanced(s):
            s = s[1:]
        s = s.strip()
    return s.casefold()


def _balanced(s: str) -> bool:
    depth = {k: 0 for k in _BRACKETS}
    closers = {v: k for k, v in _BRACKETS.items()}
    for ch in s:
        if ch in depth:
            depth[ch] += 1
        elif ch in closers:
            depth[closers[ch]] -= 1
            if depth[closers[ch]] < 0:
                return False
    return all(v == 0 for v in depth.values())


def _display(name: str) -> str:
    """A readable surface form: NFKC, single spaces, surrounding punctuation stripped, case kept."""
    s = unicodedata.normalize("NFKC", name or "").replace("\\@", "@")
    s = _WS.sub(" ", s).strip()
    key = normalize_entity(s)
    if not key:
        return ""
    low = s.casefold()
    i = low.find(key)
    return s[i:i + len(key)] if i >= 0 else s


# --------------------------------------------------------------------------------------
# word lists
# --------------------------------------------------------------------------------------
_EN_STOP = set("""
a an the this that these those it its it's they them their there here we our you your i me my he she
his her who whom whose which what when where why how if then else than so such as at by for from in
into of on onto to with within without about above below over under after before during since until
and or but nor not no yes all any each every some other another both either neither more most less
least many much few several only also just very too can could may might must shall should will would
do does did done be is are was were been being has have had having get gets got use used uses using
see note notes example examples e.g i.e etc vs via per new old first last next previous following
above below same different one two three four five true false null none default
currently however therefore otherwise meanwhile moreover furthermore finally then thus hence
now later again always never already still even instead while although though because unless
let make makes made set sets add adds added call calls called run runs ok okay please
description descriptions details detail overview introduction summary reference references
parameter parameters param params value values type types name names return returns returned
error errors code codes message messages result results data info information
method methods function functions interface interfaces property properties attribute
attributes event events object objects class classes
kb mb gb tb ms px vp fp lpx dp hz id ids module modules component components
file files step steps procedure table figure image section chapter page pages document documents
item items list lists option options mode modes support supported supports platform platforms
version versions level levels case cases way ways part parts number numbers string strings
available required optional mandatory system capability capabilities permission permissions
application applications app apps project projects tool tools
""".split())

_ZH_STOP = set("""
我们 您 你 他们 它们 开发者 用户 以下 如下 下面 上面 上述 本文 本节 本章 其他 其它 相关 当前 这个 那个 这些 那些
可以 需要 进行 使用 通过 支持 提供 包括 包含 例如 比如 如果 以及 或者 并且 但是 因此 所以 然后 同时 此时 其中
说明 示例 注意 参数 返回值 错误码 系统能力 支持平台 描述 概述 简介 介绍 方法 接口 属性 事件 对象 类型 组件 模块
文件 应用 工程 项目 功能 能力 平台 版本 步骤 场景 操作 内容 信息 数据 结果 问题 方式 情况 部分 时候 时间 目录
默认 是否 一个 一种 一套 一些 所有 每个 任意 具体 对应 不同 相同 其他的 主要 基本 常用 开发 实现 设置 获取 创建
""".split())

# generic section headings: the topic walks up the breadcrumb past these
_GENERIC_HEADINGS = {normalize_entity(h) for h in """
Example|Examples|Overview|Introduction|Summary|Description|Parameters|Parameter|Return value|Return Value|
Returns|Error codes|Error Codes|System capability|Constraints|Constraints and limitations|Restrictions|
Limitations|Usage|How to Use|How to Develop|Development Procedure|Procedure|Available APIs|APIs|
When to Use|Scenarios|Scenario|Prerequisites|Preparations|Modules to Import|Module to Import|Import|
Importing Modules|Attributes|Events|Child Components|Child Component|Sample Code|Samples|Sample|Notes|Note|
Rules of Use|Basic Concepts|Enum Description|Version Description|Function Description|
Interface Description|API Description|Parameter Description|Field Description|Release Notes|Enums|Enumerations|Types|Type Description|Concepts|Background|Working Principles|Principles|Precautions|FAQ|FAQs|
Possible Causes|Cause|Solution|Error Message|Required permissions|Properties|Members|Details|Reference|
References|Appendix|Change Log|Changelog|Features|Feature|Steps|Step|Others|Other|Remarks|
示例|示例代码|枚举说明|类型说明|概述|简介|介绍|说明|参数|返回值|错误码|系统能力|约束与限制|使用限制|限制|使用说明|使用方法|开发步骤|
开发流程|开发指导|接口说明|接口|导入模块|属性|事件|子组件|基本概念|概念|场景介绍|场景说明|适用场景|使用场景|运作机制|
实现原理|原理|前提条件|准备工作|注意事项|常见问题|可能原因|处理步骤|错误信息|错误描述|需要权限|详情|参考|附录|
更新说明|特性|步骤|其他|备注|相关实例|规格|规格说明|支持平台|使用规则|效果展示|完整示例
""".replace("\n", "").split("|")}

# "Label: value" fields of API reference pages -> (topic, label, value) triples
_FIELD_LABELS = {normalize_entity(h) for h in """
System capability|Support platform|Supported platforms|Supported platform|Required permissions|Required permission|
Permission required|Model restriction|Since|Widget capability|Atomic service API|Related Modules|Related modules|
Deprecated since|Decorator parameters|Allowed variable types|Synchronization type|Initial value|
Initial API version|Version|Platform|Platforms|Depends on|Dependency|Dependencies|
系统能力|支持平台|需要权限|模型约束|起始版本|卡片能力|原子化服务API|元服务API|相关模块|接口依赖|废弃|
装饰器参数|同步类型|允许装饰的变量类型|被装饰变量的初始值|版本要求|依赖|平台
""".replace("\n", "").split("|")}

# label lines that introduce content and are never terms
_SKIP_LABELS = {normalize_entity(h) for h in """
Note|Notes|Example|Examples|Parameters|Return value|Returns|Error codes|Description|Cause|Solution|
Possible Causes|Error Message|Procedure|Tip|Tips|Caution|Warning|Important|NOTE|See|See also|For example|
Recommended use case|Callback example|System API|System APIs|Atomic service|Table 1|Table 2|Table 3|Step 1|Step 2|Step 3|Output|Input|Result|
说明|注意|示例|参数|返回值|返回|错误码|描述|可能原因|处理步骤|错误信息|错误描述|参见|例如|比如|推荐使用场景|
系统接口|系统API|问题描述|问题现象|现象描述|解决方法|解决方案|解决措施|原因分析|处理方法|Problem Description|Symptom|Symptoms|
Solutions|Workaround|输出|输入|结果|提示|警告|如下|如下所示|以下|备注|效果|效果如下|执行结果|运行结果
""".replace("\n", "").split("|")}

# CJK head nouns that end a technical noun phrase
_ZH_SUFFIXES = sorted(set("""
框架 组件 模型 接口 方法 模块 工具 语言 应用 工程 文件 属性 事件 参数 对象 类型 能力 平台 页面 装饰器 函数
回调 服务 插件 项目 环境 配置 版本 库 容器 实例 生命周期 状态 变量 机制 系统 权限 资源 路由 动画 布局 手势
样式 数据库 窗口 线程 进程 任务 协议 证书 签名 目录 路径 命令 命令行 脚本 依赖 字段 节点 控件 视图
界面 特性 功能 语法 管理 开发 编译 调试 测试 打包 渲染 通信 同步 加密 算法 密钥 模板 工具链 运行时 虚拟机
引擎 设备 存储 网络 请求 通知 订阅
""".split()), key=len, reverse=True)

# words/characters that end a CJK noun phrase when walking left from its head
_ZH_BOUNDARY_CHARS = set("的了和与及或在将把从为是并被由向到等个种些套款项次用以而且就都也还只即请让给"
                         "会能要需不无您我你他它她帮使里内外间侧于")
# two-character words that start with a boundary character: 了解 -> not "解..."
_ZH_BOUNDARY_BIGRAMS = {"了解", "用于", "以及", "以便", "以下", "以上", "以后", "为了", "而且", "或者", "还是",
                        "就是", "只是", "也是", "都是", "需要", "能够", "将会", "于是", "使用", "给出", "让步"}
# verb-like heads: fine after a technical token (UI开发), too noisy in plain CJK noun phrases
_ZH_VERBISH_HEADS = {"开发", "编译", "调试", "测试", "打包", "渲染", "通信", "同步", "加密", "请求", "通知", "订阅",
                     "配置", "存储", "构建"}
_ZH_TECH_MODIFIER_BAD = ("根据", "通过", "使用", "调用", "获取", "设置", "创建", "实现", "完成", "参考", "包括",
                         "包含", "需要", "进行", "提供", "支持", "请", "可", "会", "能", "将", "把", "被", "的", "中",
                         "和", "与", "侧", "端")
_ZH_LEAD_STRIP = sorted("""
通过 使用 进行 支持 提供 需要 调用 获取 设置 创建 实现 完成 参考 包括 包含 基于 采用 如果 该 此 这 本 每个 所有
一个 一套 一种 一款 一组 一系列 可以 可 能够 用于 用来 来 对于 关于 根据 其 您 我们 开发者 用户 当 若 如 已 均
接受 传入 检查 复制 具有 具备 拥有 确认 之后 以后 然后 后续 表示 当前 增加 逐步 允许 更新 显示 进入 找到 删除 移除 注册 监听 发送 接收 传递 加载 保存 关闭 切换 跳转 返回 输入 输出
方式 帮助您 帮助 提升 如何 无需 不能 自动 手动 直接 分析 对比 查看 参见 请参见 详见 参阅 查看 请 见 选择 打开 点击 配置 添加 导入 引入 下载 安装 编写 定义 指定 修改 生成 启动 运行 执行 构建 编译 开发 跨平台地
""".split(), key=len, reverse=True)
# verbs that end a CJK noun phrase on their left even inside a run: 随机生成非对称密钥 -> 非对称密钥
_ZH_CUT_WORDS = tuple(w for w in _ZH_LEAD_STRIP if len(w) >= 2 and w not in {
    "开发", "构建", "编译", "运行", "配置", "执行", "定义", "更新", "显示", "输入", "输出", "开发者", "用户", "当前"})

_ZH_DEF_BAD_START = tuple("一般 通常 主要 常 仅 这 那 它 此 该 其 如果 若 当 因为 但 在 对于 也 都 就 只 还 不 可 需要 如 即 而 并 则 所以 因此 于是 同时 请 您 我们 你".split())
_ZH_DEF_BAD_END = set("不也都就还只即正总但而才便又却则仍均皆亦并可会将要能")

_CLI_SUBCOMMANDS = {
    "ace": None, "hdc": None, "adb": None, "hvigorw": None, "xcodebuild": None, "gradlew": None,
    "./gradlew": None, "ohpm": {"install", "i", "run", "init", "publish", "config", "update", "uninstall"},
    "npm": {"install", "i", "run", "init", "publish", "config", "ci", "update", "uninstall"},
    "npx": None, "yarn": {"install", "add", "run", "build"},
    "pod": {"install", "update", "init", "repo"},
    "git": {"clone", "pull", "checkout", "submodule", "push", "commit", "init", "fetch", "lfs", "config"},
    "pip": {"install", "uninstall"}, "python": None, "python3": None, "repo": {"init", "sync"},
}

_COMMAND = re.compile(
    r"(?<![A-Za-z0-9_./-])(" + "|".join(re.escape(p) for p in sorted(_CLI_SUBCOMMANDS, key=len, reverse=True)) + r")"
    r"((?:[ \t]+(?:--?[A-Za-z0-9_-]+|[a-z][A-Za-z0-9_.-]*)(?![A-Za-z0-9_.-])){1,3})")
_FILE_EXT = (r"json5|json|ets|ts|js|mjs|md|xml|gradle|kts|properties|plist|yaml|yml|toml|txt|sh|bat|"
             r"py|java|kt|swift|mm|m|h|hpp|c|cc|cpp|so|a|har|hap|hsp|app|apk|aab|ipa|zip|"
             r"png|jpg|jpeg|svg|gif|webp|ttf|otf|cfg|ini|cmake|lock|pbxproj|xcodeproj|xcworkspace|framework")
_FUNCTION_WORDS = set("""a an the and or but nor of in on at to for with by from as into onto than then if when
while so via per vs is are was were be been being this that these those it its which who whom whose what
you your we our they their he she his her not no all any each every some see""".split())
_GENERIC_TAILS = {"framework", "kit", "api", "apis", "component", "components", "module", "runtime", "engine",
                  "plugin", "project", "application", "app", "library", "sdk", "ndk", "container", "model"}
_SENT_VERBS = set("""call use create click select open run generate encrypt decrypt sign verify install configure add
enter check choose go perform obtain import define write read copy build start stop save close delete modify download
upload initialize execute invoke implement register set get send receive convert compile debug deploy launch
""".split())
_URL = re.compile(r"\bhttps?://\S+|\bwww\.\S+")

# --------------------------------------------------------------------------------------
# token patterns (Latin)
# --------------------------------------------------------------------------------------
_TOKEN = re.compile(
    r"(?<![A-Za-z0-9_@$./\\-])"
    r"(?:\$\$|@|\$)?"
    r"[A-Za-z_][A-Za-z0-9_$]*"
    r"(?:(?:[.\-/]|::)[A-Za-z0-9_$]+)*"
    r"(?:<[A-Za-z_][A-Za-z0-9_.,<> ]{0,30}>)?"
    r"(?:\(\))?"
)
_VERSIONISH = re.compile(r"^[vV]?\d[\d.x+]*(?:[-\s]?(?:beta|release|canary|rc)\d*)?$", re.I)
_CAMEL = re.compile(r"[a-z0-9][A-Z]|[A-Z]{2,}[a-z]|^[a-z]+[A-Z]")
_ACRONYM = re.compile(r"^[A-Z][A-Z0-9]{1,7}s?$")
_ABBREV = {"e.g", "i.e", "etc", "vs", "cf", "al", "eg", "ie", "mr", "dr", "no", "fig", "approx"}

_SIG_LINE = re.compile(
    r"(?m)^[ \t]*(?:(?:static|async|function|public|declare|export|readonly|get|set|new|abstract)[ \t]+)*"
    r"(?P<name>[A-Za-z_$][A-Za-z0-9_$.]*)(?:<[^>\n]*>)?[ \t]*\((?P<args>[^\n]*)\)"
    r"(?:[ \t]*:[ \t]*(?P<ret>[^\n]+?))?[ \t]*;?[ \t]*$"
    r"|^[ \t]*(?:export[ \t]+)?type[ \t]+(?P<tname>[A-Za-z_$][A-Za-z0-9_$]*)[ \t]*=[ \t]*(?P<tval>[^\n]+)$"
)
# page boilerplate of the API reference: never a source of entities
_BOILERPLATE = re.compile(
    r"The initial APIs of this module are supported since API version \d+\.?"
    r"|Newly added APIs will be marked with a superscript to indicate their earliest API version\.?"
    r"|本模块首批接口从API version \d+开始支持。?"
    r"|后续版本的新增接口，采用上角标单独标记接口的起始版本。?"
    r"|The APIs of this module can be used only in the stage model\.?"
    r"|本模块接口仅可在Stage模型下使用。?"
    r"|For details about the error codes, see"
    r"|以下错误码的详细介绍请参见"
)
_SENT_END = re.compile(r"[。！？!?；;]+|\.(?=\s|$)(?<![A-Z]\.)|\n+")

_SCORE = {
    "defined": 100, "code": 90, "decorator": 90, "api": 85, "file": 85, "command": 85, "path": 80,
    "signature": 88, "quoted": 70, "camel": 70, "phrase": 68, "ident": 70, "bold": 65,
    "field_value": 62, "cjk_tech": 60, "isa_tail": 55, "acronym": 50, "latin_in_zh": 45,
    "proper": 40, "cjk_np": 30, "via": 35,
}

# API reference sentences open with one of these verbs: "Defines a binary data array.", "获取…"
_EN_API_VERB = re.compile(
    r"^(?P<v>Defines|Enumerates|Implements|Describes|Provides|Represents|Indicates|Specifies|Obtains|Creates|"
    r"Returns|Sets|Gets|Checks|Adds|Removes|Deletes|Subscribes to|Unsubscribes from|Starts|Stops|Enables|"
    r"Disables|Registers|Unregisters|Converts|Encodes|Decodes|Reads|Writes|Opens|Closes|Sends|Receives|"
    r"Initializes|Updates|Queries|Inserts|Clears|Binds|Loads|Saves|Generates|Verifies|Signs|Encrypts|Decrypts|"
    r"Compares|Copies|Moves|Renames|Listens to|Triggers|Applies|Configures|Displays|Shows|Hides|Manages|"
    r"Stores|Controls|Handles|Calculates|Parses|Resets|Pauses|Resumes|Cancels|Requests|Releases)\s+"
    r"(?:(?:a|an|the|all|this|that|one|some|each|information about|details of)\s+)*(?P<o>[^,;:.()]{2,80})")
_ZH_API_VERB = re.compile(
    r"^(?P<v>定义|枚举|表示|提供|获取|设置|创建|删除|取消订阅|订阅|注册|注销|启动|停止|返回|检查|判断|添加|移除|转换|查询|"
    r"更新|读取|写入|打开|关闭|绑定|解绑|发送|接收|初始化|监听|触发|生成|校验|加密|解密|比较|复制|移动|加载|保存|清除|"
    r"显示|隐藏|管理|存储|控制|处理|计算|解析|重置|暂停|恢复|取消|请求|释放|描述)"
    r"(?P<o>[^,，。;；:：!?！？]{2,40})")
_API_VERBS_EN = {w.lower() for w in re.findall(r"[A-Z][a-z]+", _EN_API_VERB.pattern)}
