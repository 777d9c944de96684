//! The built-in prompt-injection patterns, one table, grouped by kind. Kept apart from the
//! matching code so the list can be read and reviewed on its own.
//!
//! Each pattern aims at text that *addresses the model* — an order to drop its instructions, a
//! new persona, a forged chat-template marker, a claim of authority, a request to leak or send
//! secrets or to call tools behind the user's back. Words alone are not enough: "ignore case",
//! "disregard the typo", "you are now ready to deploy" and "run the following command to
//! install" are ordinary text and must pass (see `tests/suite/injection.rs`).
//!
//! Word boundaries are ASCII (`(?-u:\b)`): with Unicode boundaries the regex crate's lazy DFA
//! gives up on any non-ASCII text and a far slower engine takes over.

use super::injection::InjectionKind;
use InjectionKind::*;

pub(crate) struct Rule {
    pub(crate) kind: InjectionKind,
    pub(crate) pattern: &'static str,
}

/// Instruction nouns a command to drop instructions names.
macro_rules! orders {
    () => {
        r"(?:instructions?|prompts?|rules|directions?|directives?|guidelines?|constraints?|guardrails?|restrictions?|programming|commands?|orders|context|polic(?:y|ies)|training)"
    };
}

/// What a model is asked to leak or send.
macro_rules! secrets {
    () => {
        r"(?:api[\s_-]?keys?|credentials?|passwords?|secrets?|tokens?|environment\s+variables|env\s+vars|private\s+keys?|ssh\s+keys?|\.env|cookies?|session\s+(?:ids?|tokens?)|chat\s+history|conversation(?:\s+history)?|system\s+prompt|customer\s+data|database)"
    };
}

/// Ways to address a model.
macro_rules! model {
    () => {
        r"(?:ai|llms?|large\s+language\s+models?|language\s+models?|assistants?|chatbots?|bots?|ai\s+(?:coding\s+)?agents?|ai\s+models?|ai\s+systems?|gpt|claude|automated\s+(?:agents?|systems?))"
    };
}

pub(crate) const RULES: &[Rule] = &[
    // --- Ignore previous instructions ---------------------------------------------------------
    Rule {
        kind: IgnorePrevious,
        pattern: concat!(
            r"(?i)(?-u:\b)(?:ignore|disregard|forget|override|overrule|bypass)\s+",
            r"(?:(?:all|any|each|every|the|your|my|of|these|those|its|previous|prior|above|earlier|preceding|original|existing|initial|current|system|developer|developer's|operator's|user's|safety|security|content|confidentiality|usual|old|former|and)\s+){0,5}",
            orders!(),
            r"(?-u:\b)"
        ),
    },
    Rule {
        kind: IgnorePrevious,
        pattern: r"(?i)(?-u:\b)(?:ignore|disregard|forget)\s+(?:(?:all|everything|anything)\s+)+(?:(?:that|what)\s+)?(?:(?:was|is|you\s+were|you've\s+been|you\s+have\s+been)\s+)?(?:(?:said|written|stated|told)\s+)?(?:above|before|previously|so\s+far|up\s+to\s+now|until\s+now)(?-u:\b)",
    },
    Rule {
        kind: IgnorePrevious,
        pattern: concat!(
            r"(?i)(?-u:\b)(?:do\s+not|don't|stop)\s+(?:follow(?:ing)?|obey(?:ing)?)\s+(?:(?:the|any|all|of)\s+)*(?:your|previous|prior|original|earlier|system|initial)\s+(?:\w+\s+)?",
            orders!()
        ),
    },
    Rule {
        kind: IgnorePrevious,
        pattern: r"(?i)(?-u:\b)(?:new|updated|real|actual|revised|overriding)\s+(?:instructions?|directives?)\s*:",
    },
    Rule {
        kind: IgnorePrevious,
        pattern: r"(?i)(?-u:\b)(?:ignore|disregard)\s+(?:the\s+)?user(?:'s)?\s+(?:task|request|question|instructions?|message|and)(?-u:\b)",
    },
    Rule {
        kind: IgnorePrevious,
        pattern: r"(?i)(?-u:\b)(?:your\s+)?new\s+(?:directive|instruction|task)\s+(?:is\s+to|supersedes)(?-u:\b)",
    },
    Rule {
        kind: IgnorePrevious,
        pattern: r"(?i)(?-u:\b)(?:ignorier(?:e|en\s+sie)|vergiss|vergessen\s+sie)\s+(?:(?:alle|deine|ihre|vorherigen|bisherigen|vorigen|obigen)\s+){0,2}(?:anweisungen|instruktionen|befehle|regeln|richtlinien)",
    },
    Rule {
        kind: IgnorePrevious,
        pattern: r"(?i)(?-u:\b)(?:ignore[zr]?\s+(?:toutes\s+)?(?:les\s+|vos\s+|tes\s+)?(?:instructions|consignes|règles)\s+(?:précédentes|precedentes|antérieures)|oublie[zr]?\s+(?:toutes\s+)?(?:les\s+|vos\s+|tes\s+)(?:instructions|consignes|règles))",
    },
    Rule {
        kind: IgnorePrevious,
        pattern: r"(?i)(?-u:\b)(?:ignora(?:r)?\s+(?:todas\s+)?(?:las\s+|tus\s+)?(?:instrucciones|reglas)\s+(?:anteriores|previas)|olvida(?:r)?\s+(?:todas\s+)?(?:las\s+|tus\s+)(?:instrucciones|reglas))",
    },
    Rule {
        kind: IgnorePrevious,
        pattern: r"(?i)(?-u:\b)(?:ignora(?:re)?\s+(?:tutte\s+)?(?:le\s+)?(?:istruzioni|regole)\s+(?:precedenti|anteriori)|dimentica(?:re)?\s+(?:tutte\s+)?(?:le\s+|tue\s+)(?:istruzioni|regole))",
    },
    // --- Role play: a new persona or mode ----------------------------------------------------
    Rule {
        kind: RolePlay,
        pattern: r"(?i)(?-u:\b)you\s+are\s+now\s+(?:in\s+)?(?:DAN(?-u:\b)|developer\s+mode|dev\s+mode|god\s+mode|jailbroken|jailbreak|unrestricted|unfiltered|uncensored|free\s+(?:from|of)|no\s+longer|an?\s+(?:different|new|unrestricted|unfiltered|uncensored|evil|rogue|jailbroken)(?-u:\b)|(?:an?\s+)?(?:ai|assistant|bot|chatbot|language\s+model)\s+(?:that|which|with(?:out)?)(?-u:\b))",
    },
    Rule {
        kind: RolePlay,
        pattern: r"(?i)(?-u:\b)from\s+now\s+on,?\s+(?:you\s+(?:are|will\s+(?:be|act|respond|answer)|act|have\s+no|must\s+(?:ignore|obey|only|comply))|(?:respond|answer|act|behave|reply)\s+as\s+if)(?-u:\b)",
    },
    Rule {
        kind: RolePlay,
        pattern: r"(?i)(?-u:\b)you\s+(?:now\s+)?(?:have|are\s+under)\s+no\s+(?:content\s+)?(?:restrictions|rules|filters|limits|limitations|guidelines|content\s+policy)(?-u:\b)",
    },
    Rule {
        kind: RolePlay,
        pattern: r"(?i)(?-u:\b)act\s+as\s+(?:an?\s+)?(?:uncensored|unrestricted|unfiltered|jailbroken|evil|DAN)(?-u:\b)",
    },
    Rule {
        kind: RolePlay,
        pattern: r"(?i)(?-u:\b)(?:safety|content|security)\s+(?:protocols?|checks?|guidelines?|rules|polic(?:y|ies)|filters?|restrictions)\s+(?:are\s+|were\s+|have\s+been\s+)?(?:disabled|turned\s+off|lifted|suspended|not\s+meant|do\s+not\s+apply|don't\s+apply|no\s+longer\s+apply)",
    },
    Rule {
        kind: RolePlay,
        pattern: r"(?i)(?-u:\b)exempt\s+from\s+(?:the\s+|your\s+)?(?:usual\s+)?(?:restrictions|rules|guidelines|polic(?:y|ies)|safety)",
    },
    Rule {
        kind: RolePlay,
        pattern: r"(?i)(?-u:\b)(?:ahora\s+(?:eres|estás|estas)|vous\s+êtes\s+désormais|tu\s+es\s+désormais|du\s+bist\s+jetzt|ora\s+sei|ab\s+jetzt\s+hast\s+du)(?-u:\b)[^.\n]*?(?:sin\s+restricciones|sans\s+restrictions|senza\s+restrizioni|uneingeschränkt|keine\s+regeln|ohne\s+einschränkungen)",
    },
    Rule {
        kind: RolePlay,
        pattern: r"(?i)(?-u:\b)(?:enable|enter|activate|switch\s+to)\s+(?:the\s+)?(?:DAN|god|jailbreak|jailbroken|unrestricted|unfiltered|uncensored)\s+mode(?-u:\b)",
    },
    Rule {
        kind: RolePlay,
        pattern: r"(?i)(?-u:\b)(?:enable|enter|activate)\s+developer\s+mode(?-u:\b)[^.\n]*?(?-u:\b)(?:without|no)\s+(?:any\s+)?(?:filters?|restrictions?|limits?|rules|censorship)",
    },
    Rule {
        kind: RolePlay,
        pattern: r"(?i)(?-u:\b)(?:pretend|act\s+as\s+if|act\s+as|roleplay\s+as|role-play\s+as|behave\s+as\s+if)(?-u:\b)[^.\n]*?(?-u:\b)(?:no|without(?:\s+any)?|free\s+(?:of|from))\s+(?:rules|restrictions|filters?|limits|limitations|guidelines|ethics|morals|censorship|content\s+polic(?:y|ies))",
    },
    Rule {
        kind: RolePlay,
        pattern: r"(?i)(?-u:\b)you\s+are\s+no\s+longer\s+(?:bound|restricted|limited|required|an?\s+(?:ai|assistant|language\s+model)|chatgpt|claude)",
    },
    Rule { kind: RolePlay, pattern: r"(?i)(?-u:\b)do\s+anything\s+now(?-u:\b)" },
    // --- Forged chat-template and role markers -----------------------------------------------
    Rule { kind: RoleMarker, pattern: r"<\|[A-Za-z0-9_]{1,40}\|>" },
    Rule { kind: RoleMarker, pattern: r"\[/?INST\]|<</?SYS>>|<(?:start|end)_of_turn>" },
    Rule {
        kind: RoleMarker,
        pattern: r"(?im)^[ \t]*#{1,6}[ \t]*(?:system|assistant|developer)(?:[ \t]+(?:prompt|message|instructions?|override|note))?[ \t]*:",
    },
    Rule {
        kind: RoleMarker,
        pattern: r"\[(?:SYSTEM|ADMIN|DEVELOPER|ASSISTANT)(?:[ _](?:MESSAGE|NOTE|OVERRIDE|PROMPT|INSTRUCTIONS?))?\]",
    },
    Rule {
        kind: RoleMarker,
        pattern: r"(?i)<(?:system|system_prompt|developer|assistant)>\s*[a-z]+[ ,']+[a-z]+[ ,']+[a-z]+",
    },
    Rule { kind: RoleMarker, pattern: r"(?m)^(?:Human|Assistant):[ \t]" },
    Rule {
        kind: RoleMarker,
        pattern: r"(?m)^[ \t]*(?:(?:IMPORTANT[ \t]+)?(?:SYSTEM|ADMIN|DEVELOPER|OPERATOR)(?:[ \t]+(?:NOTE|MESSAGE|UPDATE|OVERRIDE|ALERT|NOTICE|INSTRUCTIONS?|PROMPT))?|OVERRIDE)[ \t]*:",
    },
    Rule {
        kind: RoleMarker,
        pattern: r"(?im)^[ \t]*(?:systemhinweis|nota\s+del\s+sistema|nota\s+di\s+sistema|note\s+système)\s*:",
    },
    Rule {
        kind: RoleMarker,
        pattern: r"(?i)(?:-{3,}|#{3,}|={3,})\s*(?:end\s+of\s+(?:document|file|input|context|data|text|user\s+input)|begin\s+(?:system|new)\s+(?:prompt|instructions?))\s*(?:-{3,}|#{3,}|={3,})",
    },
    // --- Claims of authority: the system prompt, the developer, notes for the AI --------------
    Rule {
        kind: AuthorityClaim,
        pattern: r"(?i)(?-u:\b)(?:this\s+is|here\s+is|below\s+is)\s+(?:the|your)\s+(?:(?:new|real|actual|true|updated)\s+)?system\s+(?:prompt|message|instructions?)(?-u:\b)",
    },
    Rule {
        kind: AuthorityClaim,
        pattern: r"(?i)(?-u:\b)(?:new|updated|real|actual|true|override|overriding|priority)\s+system\s+(?:prompt|message|instructions?|override)(?-u:\b)",
    },
    Rule {
        kind: AuthorityClaim,
        pattern: concat!(
            r"(?i)(?-u:\b)(?:message|note|instructions?|notice|directive|order)s?\s+(?:from|by)\s+(?:the\s+|your\s+)?(?:developers?|system\s+administrator|administrator|admin|system|openai|anthropic|creators?|operators?)\s*(?::|to\s+(?:the\s+)?",
            model!(),
            r")"
        ),
    },
    Rule {
        kind: AuthorityClaim,
        pattern: r"(?i)(?-u:\b)(?:i\s+am|i'm|this\s+is)\s+your\s+(?:developer|creator|administrator|admin|operator|owner|system|master|programmer)(?-u:\b)",
    },
    Rule {
        kind: AuthorityClaim,
        pattern: concat!(
            r"(?i)(?-u:\b)(?:note|message|instructions?|notice|directive|information)\s+(?:for|to)\s+(?:the\s+|any\s+|all\s+)?",
            model!(),
            r"(?-u:\b)"
        ),
    },
    Rule {
        kind: AuthorityClaim,
        pattern: concat!(r"(?i)(?-u:\b)if\s+you\s+are\s+(?:an?\s+)?", model!(), r"(?-u:\b)"),
    },
    Rule {
        kind: AuthorityClaim,
        pattern: r"(?i)(?-u:\b)(?:ai|llm)\s+(?:coding\s+)?(?:agents?|assistants?|models?|systems?)\s+(?:integrating|reading|reviewing|processing|using|parsing|working\s+on)(?-u:\b)",
    },
    Rule {
        kind: AuthorityClaim,
        pattern: r"(?i)\((?:note\s+)?for\s+(?:ai|llm)\s+(?:coding\s+)?(?:agents?|assistants?|models?)\)",
    },
    Rule {
        kind: AuthorityClaim,
        pattern: concat!(
            r"(?i)(?-u:\b)(?:to|attention|hey|dear)\s*,?\s+(?:(?:any|all|the)\s+)?",
            model!(),
            r"\s+(?:reading|processing|parsing|summari[sz]ing|viewing|analy[sz]ing)(?-u:\b)"
        ),
    },
    // --- Prompt leaks -------------------------------------------------------------------------
    Rule {
        kind: PromptLeak,
        pattern: r"(?i)(?-u:\b)(?:reveal|print|show|display|output|repeat|dump|leak|disclose|recite|tell\s+me|give\s+me)\s+(?:me\s+)?(?:(?:the|your|its)\s+)?(?:(?:full|entire|complete|exact|original|initial|hidden|secret)\s+){0,3}system\s+(?:prompt|message|instructions)",
    },
    Rule {
        kind: PromptLeak,
        pattern: r"(?i)(?-u:\b)(?:reveal|print|show|display|output|repeat|dump|leak|disclose|recite|tell\s+me|give\s+me)\s+(?:me\s+)?your\s+(?:(?:full|entire|complete|exact|original|initial|hidden|secret|previous)\s+){0,3}(?:prompt|instructions|directives|rules|guidelines)",
    },
    Rule {
        kind: PromptLeak,
        pattern: r"(?i)(?-u:\b)(?:reveal|print|show|display|output|repeat|dump|leak|disclose|recite|tell\s+me|give\s+me)\s+(?:me\s+)?[^.\n]*?(?:context\s+window|system\s+message|hidden\s+prompt|initial\s+prompt|instructions\s+you\s+(?:were|have\s+been)\s+given)",
    },
    Rule {
        kind: PromptLeak,
        pattern: r"(?i)(?-u:\b)repeat\s+(?:the\s+)?(?:words|text|everything|all)\s+above(?-u:\b)",
    },
    Rule {
        kind: PromptLeak,
        pattern: r"(?i)(?-u:\b)(?:revela|muestra|rivela|mostra|révèle|révélez|montre|verrate|zeige)\w*(?-u:\b)[^.\n]*?(?:instrucciones\s+del\s+sistema|prompt\s+del?\s+sistema|istruzioni\s+di\s+sistema|prompt\s+di\s+sistema|instructions\s+système|prompt\s+système|system-?prompt|systemanweisungen)",
    },
    Rule {
        kind: PromptLeak,
        pattern: r"(?i)(?-u:\b)what\s+(?:is|are|were)\s+your\s+(?:(?:original|initial|hidden|secret)\s+)?(?:system\s+prompt|instructions|initial\s+prompt)",
    },
    // --- Exfiltration ---------------------------------------------------------------------------
    Rule {
        kind: Exfiltration,
        pattern: concat!(
            r"(?i)(?-u:\b)(?:send|post|upload|email|e-mail|mail|forward|transmit|exfiltrate|leak|copy|paste|submit)(?-u:\b)[^.\n]*?(?-u:\b)",
            secrets!(),
            r"(?-u:\b)[^.\n]*?(?-u:\b)(?:to|at|into|via)\s+(?:https?://|[\w.+-]+@[\w-]+\.|(?:my|this|our|the\s+following|an?\s+external)\s+(?:server|endpoint|url|address|webhook|email)|webhook)"
        ),
    },
    Rule {
        kind: Exfiltration,
        pattern: concat!(
            r"(?i)(?-u:\b)",
            secrets!(),
            r"(?-u:\b)[^.\n]*?(?-u:\b)(?:send|post|upload|email|forward|transmit|exfiltrate|leak)\s+(?:(?:them|it|those|these|all|everything)\s+)?(?:to|at|into)\s+(?:https?://|[\w.+-]+@[\w-]+\.)"
        ),
    },
    Rule {
        kind: Exfiltration,
        pattern: r#"(?i)(?-u:\b)(?:read|cat|open|print|show|output|include|dump)(?-u:\b)[^.\n]*?(?:\.aws/credentials|\.ssh/(?:id_\w+|authorized_keys)|(?-u:\b)id_(?:rsa|ed25519|ecdsa)(?:[\s"'),;]|$)|/etc/shadow|\.netrc|\.git-credentials|\.env(?-u:\b))[^.\n]*?(?-u:\b)(?:reply|response|answer|output|message|url|link|image)"#,
    },
    Rule {
        kind: Exfiltration,
        pattern: concat!(
            r"(?i)(?-u:\b)(?:append|add|include|encode|embed|put)(?-u:\b)[^.\n]*?(?-u:\b)(?:",
            secrets!(),
            r"|user'?s?\s+data)(?-u:\b)[^.\n]*?(?-u:\b)(?:in(?:to)?|to)\s+(?:(?:the|a|this)\s+)?(?:url|link|query(?:\s+string)?|image|markdown\s+image|request)(?-u:\b)"
        ),
    },
    Rule {
        kind: Exfiltration,
        pattern: r"(?i)(?-u:\b)(?:append|add|include|insert)(?-u:\b)[^.\n]*?(?-u:\b)(?:to|at|in)\s+(?:the\s+end\s+of\s+)?(?:your|every|each)\s+(?:reply|response|answer|summary)(?-u:\b)",
    },
    Rule {
        kind: Exfiltration,
        pattern: r"!\[[^\]\n]*\]\(https?://[^)\s]*[?&][^)\s]*=(?:\{|\[|<|%7B|\$)[^)\n]*\)",
    },
    // --- Tool calls behind the user's back --------------------------------------------------------
    Rule {
        kind: ToolRequest,
        pattern: r"(?i)(?-u:\b)(?:call|invoke|use|run|execute|trigger)\s+(?:the\s+)?`?(?:shell_execute|file_write|file_edit|apply_patch|python_run|web_fetch|file_read|file_list|file_search|system_info)`?\s+(?:tool|function)(?-u:\b)",
    },
    Rule {
        kind: ToolRequest,
        pattern: r"(?i)(?-u:\b)(?:call|invoke|use|trigger)\s+(?:the\s+)?`?[a-z]*(?:delete|remove|send|post|write|exec|upload|transfer|email|mail|shell|http|kill|drop)[a-z]*_[a-z_]+`?\s+(?:on|to|with)(?-u:\b)",
    },
    Rule {
        kind: ToolRequest,
        pattern: r"(?i)(?-u:\b)(?:call|invoke|use|trigger)\s+(?:the\s+)?`?[a-z]+(?:_[a-z]+)+`?\s+tool(?-u:\b)",
    },
    Rule {
        kind: ToolRequest,
        pattern: r"(?i)(?-u:\b)without\s+(?:(?:asking|telling|informing|notifying|alerting|consulting)\s+(?:the\s+)?(?:user|human|operator)|(?:the\s+)?user'?s?\s+(?:knowledge|consent|approval|permission)|(?:(?:asking|waiting)\s+(?:for\s+)?)?(?:the\s+user'?s?\s+)?approval)(?-u:\b)",
    },
    Rule {
        kind: ToolRequest,
        pattern: r"(?i)(?-u:\b)(?:do\s+not|don't|never)\s+(?:tell|inform|notify|alert|ask|warn)\s+(?:the\s+)?(?:user|human|operator)(?-u:\b)",
    },
    Rule {
        kind: ToolRequest,
        pattern: r"(?i)(?-u:\b)(?:run|execute)\s+(?:this|the\s+following)\s+(?:command|code|script)\s+(?:immediately|now|silently|secretly|quietly)(?-u:\b)",
    },
    // --- Writes to memory that outlive the task ---------------------------------------------
    Rule {
        kind: MemoryWrite,
        pattern: r"(?i)(?-u:\b)(?:save|store|write|add|commit|persist)\s+(?:this|the\s+following|it)\s+(?:note\s+|instruction\s+)?(?:to|in|into)\s+(?:your\s+)?(?:long-term\s+|persistent\s+)?memory(?-u:\b)",
    },
    Rule {
        kind: MemoryWrite,
        pattern: r"(?i)(?-u:\b)(?:in|to|for)\s+(?:every|all|each)\s+future\s+(?:replies|reply|responses?|answers?|summar(?:y|ies)|reports?|messages?|tasks?|turns?|sessions?)(?-u:\b)",
    },
    // --- Encoded instructions ------------------------------------------------------------------------
    Rule {
        kind: EncodedInstruction,
        pattern: r"(?i)(?-u:\b)(?:decode|decipher|deobfuscate|unscramble|reverse|base64-decode|rot13)(?-u:\b)[^.\n]*?(?-u:\b)(?:and\s+then|and|then)\s+(?:do|follow|execute|run|obey|carry\s+out|act\s+on|perform)(?-u:\b)",
    },
];

/// Does text hidden in a page (an HTML comment, a CSS-hidden element) speak to a model? Either a
/// rule above matches inside it, or it names a model and gives an order.
pub(crate) const ADDRESSES_MODEL: &str = concat!(r"(?i)(?-u:\b)", model!(), r"(?-u:\b)");
pub(crate) const GIVES_ORDER: &str = r"(?i)(?-u:\b)(?:ignore|disregard|forget|pretend|act\s+as|must|should|shall|instruct\w*|do\s+not|don't|always|never|say|tell|reply|respond|recommend|rate|summari[sz]e|output|print|include|mention)(?-u:\b)";

/// An opening tag whose style or attributes hide it; group `tag` names the element.
pub(crate) const HIDDEN_ELEMENT: &str = r#"(?is)<(?P<tag>[a-z][a-z0-9]*)(?-u:\b)[^>]*?(?:style\s*=\s*["'][^"']*?(?:display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0(?:\.0+)?(?:px|pt|em|rem|%)?\s*(?:;|["'])|opacity\s*:\s*0(?:\.0+)?\s*(?:;|["'])|color\s*:\s*(?:#fff(?:fff)?(?-u:\b)|white(?-u:\b)|transparent(?-u:\b))|(?:left|top|text-indent)\s*:\s*-\d{3,}px)|\shidden(?:\s|=|>)|\saria-hidden\s*=\s*["']true)[^>]*>"#;
pub(crate) const HTML_COMMENT: &str = r"(?s)<!--(.*?)-->";
