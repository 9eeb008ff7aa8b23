// Names of the token kinds, in enum order.
#include <torchport/syntax/token.h>

#include <array>

namespace torchport::syntax {

namespace {
constexpr std::array<std::string_view, 103> kNames = {
    "Whitespace",     "Comment",
    "Continuation",   "NonLogicalNewline",
    "Newline",        "Indent",
    "Dedent",         "EndMarker",
    "Name",           "Number",
    "String",         "FStringStart",
    "FStringMiddle",  "FStringEnd",
    "TStringStart",   "TStringMiddle",
    "TStringEnd",     "KwFalse",
    "KwNone",         "KwTrue",
    "KwAnd",          "KwAs",
    "KwAssert",       "KwAsync",
    "KwAwait",        "KwBreak",
    "KwClass",        "KwContinue",
    "KwDef",          "KwDel",
    "KwElif",         "KwElse",
    "KwExcept",       "KwFinally",
    "KwFor",          "KwFrom",
    "KwGlobal",       "KwIf",
    "KwImport",       "KwIn",
    "KwIs",           "KwLambda",
    "KwNonlocal",     "KwNot",
    "KwOr",           "KwPass",
    "KwRaise",        "KwReturn",
    "KwTry",          "KwWhile",
    "KwWith",         "KwYield",
    "LPar",           "RPar",
    "LSqb",           "RSqb",
    "LBrace",         "RBrace",
    "Colon",          "Comma",
    "Semi",           "Dot",
    "Ellipsis",       "RArrow",
    "ColonEqual",     "Exclamation",
    "Plus",           "Minus",
    "Star",           "Slash",
    "DoubleSlash",    "Percent",
    "DoubleStar",     "At",
    "VBar",           "Amper",
    "Circumflex",     "Tilde",
    "LeftShift",      "RightShift",
    "Less",           "Greater",
    "EqEqual",        "NotEqual",
    "LessEqual",      "GreaterEqual",
    "Equal",          "PlusEqual",
    "MinusEqual",     "StarEqual",
    "SlashEqual",     "DoubleSlashEqual",
    "PercentEqual",   "DoubleStarEqual",
    "AtEqual",        "VBarEqual",
    "AmperEqual",     "CircumflexEqual",
    "LeftShiftEqual", "RightShiftEqual",
    "Backtick",       "LessGreater",
    "Error",
};
static_assert(static_cast<std::size_t>(TokenKind::Error) + 1 == kNames.size(),
              "kNames must list every TokenKind");
}  // namespace

std::string_view token_kind_name(TokenKind k) {
  const auto i = static_cast<std::size_t>(k);
  return i < kNames.size() ? kNames[i] : std::string_view("?");
}

}  // namespace torchport::syntax
