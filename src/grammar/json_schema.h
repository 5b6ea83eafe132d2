// JSON Schema (draft 2020-12, the subset below) to a GBNF grammar (gbnf.h) whose texts are
// exactly JSON documents valid against the schema, or a documented subset of them. The
// grammar's start rule is `root`; whitespace is bounded as json_grammar.h describes.
//
// Supported (every other keyword is an error naming it and its JSON pointer):
//  * true / {} (any JSON value); type (a name or a list: "type": ["string", "null"]);
//    enum and const of any JSON value (with "type" beside them: the values of that type).
//  * object: properties (written in the order declared; an optional property may be left out),
//    required (a required name without a property schema: any value), additionalProperties
//    false / true / a schema (other names: strings written without escapes, never one of the
//    declared names, after the declared properties). When additionalProperties is absent no
//    other property is written (valid, since the default allows them: a subset), unless
//    "properties" is absent too: {"type": "object"} is any object.
//  * array: items (a schema, or false; a list is the draft-7 tuple form, same as prefixItems),
//    prefixItems, minItems, maxItems; uniqueItems false (true is refused). A maximum above
//    10000 is taken as 10000, a minimum above it is refused.
//  * string: minLength, maxLength (in code points; as for items, at most 10000), pattern (regex_to_gbnf.h
//    lists the subset; not together with a length), format date (February has 28 days: 29 Feb
//    is never written), time (hh:mm:ss, optional fraction, and a zone Z or +hh:mm, which
//    JSON Schema's RFC 3339 "time" requires), date-time, uuid (lowercase hex), email (a subset
//    of RFC 5321: dot-atoms of letters, digits and _+- and a dotted domain), ipv4 (dotted
//    decimal, no leading zeros), hostname (1 to 5 labels of at most 32 characters), uri (a
//    subset of RFC 3986: scheme://hostname[:port], path segments of unreserved characters, an
//    optional query of unreserved characters, = and &; no fragment, no percent escapes). A format
//    is not combined with lengths or a pattern.
//  * integer: minimum, maximum, exclusiveMinimum, exclusiveMaximum (numbers), exact by
//    digit-range construction (number_range.h). Magnitudes are written with at most 16 digits.
//  * number: the same bounds; number_range.h's BoundedNumberGbnf says what is written (no
//    exponent, fractions of up to 6 digits, integer parts strictly within the bounds).
//  * boolean, null.
//  * anyOf; oneOf is treated as anyOf (a text may match several alternatives, which oneOf
//    forbids; use alternatives that exclude each other); allOf when its schemas merge simply
//    (their keywords do not overlap, or are equal; properties are merged, required is
//    united; at most one part may declare properties when additionalProperties is set).
//    anyOf/oneOf/allOf/$ref take no constraining keyword beside them.
//  * $ref to the same document: "#", "#/$defs/Name", "#/definitions/Name", or any JSON pointer
//    "#/..." into it; recursive references are allowed (not a cycle that matches no character).
//  * Ignored annotations: title, description, examples, default, deprecated, readOnly,
//    writeOnly, $schema, $id, $comment; $defs / definitions hold schemas for $ref.
// Errors (kInvalidArgument): "json schema #/POINTER: what", e.g.
//   json schema #/properties/tags/uniqueItems: unsupported keyword "uniqueItems"
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "base/status.h"
#include "grammar/json_grammar.h"

namespace gemlet::grammar {

struct JsonSchemaOptions {
  // The syntax values are written in (json_grammar.h): JSON, or e.g. a model's tool-call
  // argument syntax. With raw strings "pattern" is refused; with bare keys, property names
  // must be names ([A-Za-z_][A-Za-z0-9_]*).
  JsonSyntax syntax;
  // Put before every rule name (the start rule becomes PREFIX + "root"), so that several
  // schemas' grammars can share one grammar text.
  std::string prefix;
};

// The grammar of `schema`. Properties come in the schema's order.
Result<std::string> JsonSchemaToGbnf(const nlohmann::ordered_json& schema,
                                     const JsonSchemaOptions& options = {});
// nlohmann::json keeps object keys sorted: properties come in alphabetical order.
Result<std::string> JsonSchemaToGbnf(const nlohmann::json& schema,
                                     const JsonSchemaOptions& options = {});
// Parses `text` (keeping the declared property order) and converts it. A JSON syntax error is
// "json schema: not JSON: ...".
Result<std::string> JsonSchemaTextToGbnf(std::string_view text);

}  // namespace gemlet::grammar
