package sqlguard

import (
	"strings"

	"github.com/schemaq/schemaq/pkg/catalog"
)

// readOnlyFunctions is the allowlist of functions a checked query may
// call. A deny list of dangerous functions is incomplete by nature (each
// PostgreSQL release and extension adds some), so the guard allows only
// what is known to be safe and refuses every other function by name;
// user-defined functions pass only when the catalog records them as
// IMMUTABLE or STABLE.
//
// How it was chosen: PostgreSQL built-ins that a report uses (arithmetic,
// string, date and time, JSON, array, conditional, aggregates and window
// functions) whose pg_proc.provolatile is immutable or stable, minus any
// that read outside the query's own relations (files, settings, other
// databases, the schema or database as a whole, as database_to_xml does),
// expose server or session state, or take locks. Three volatile ones are
// kept because a report asks for them and they have no effect outside the
// query: random() (sampling), clock_timestamp() and generate_series with
// timestamps. Type names used as functions (date(x), numeric(x)) are casts.
// Names are matched lower case, unqualified or qualified with pg_catalog.
var readOnlyFunctions = setOf(
	// aggregates
	"count", "sum", "avg", "min", "max", "bool_and", "bool_or", "every", "bit_and", "bit_or", "bit_xor",
	"string_agg", "array_agg", "json_agg", "jsonb_agg", "json_object_agg", "jsonb_object_agg",
	"stddev", "stddev_pop", "stddev_samp", "variance", "var_pop", "var_samp",
	"corr", "covar_pop", "covar_samp", "regr_avgx", "regr_avgy", "regr_count", "regr_intercept",
	"regr_r2", "regr_slope", "regr_sxx", "regr_sxy", "regr_syy",
	"percentile_cont", "percentile_disc", "mode", "any_value",
	// window functions
	"row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile",
	"lag", "lead", "first_value", "last_value", "nth_value",
	// math
	"abs", "ceil", "ceiling", "floor", "round", "trunc", "sign", "sqrt", "cbrt", "power", "pow",
	"exp", "ln", "log", "log10", "mod", "div", "pi", "degrees", "radians", "width_bucket",
	"gcd", "lcm", "factorial", "scale", "min_scale", "trim_scale", "random",
	"sin", "cos", "tan", "asin", "acos", "atan", "atan2",
	// strings
	"length", "char_length", "character_length", "octet_length", "bit_length",
	"lower", "upper", "initcap", "concat", "concat_ws", "substring", "substr", "left", "right",
	"lpad", "rpad", "ltrim", "rtrim", "btrim", "replace", "translate", "reverse", "repeat",
	"split_part", "strpos", "position", "starts_with", "format", "overlay", "md5",
	"regexp_replace", "regexp_match", "regexp_matches", "regexp_split_to_array", "regexp_split_to_table",
	"regexp_count", "regexp_substr", "regexp_like", "regexp_instr",
	"string_to_array", "array_to_string", "string_to_table", "to_hex", "ascii", "chr",
	"quote_ident", "quote_literal", "quote_nullable", "encode", "decode", "normalize", "unistr",
	// date and time
	"now", "clock_timestamp", "statement_timestamp", "transaction_timestamp",
	"date_trunc", "date_part", "extract", "date_bin", "age", "timezone", "isfinite",
	"make_date", "make_time", "make_timestamp", "make_timestamptz", "make_interval",
	"justify_days", "justify_hours", "justify_interval", "date_add", "date_subtract",
	"to_char", "to_date", "to_timestamp", "to_number",
	// JSON
	"to_json", "to_jsonb", "row_to_json", "array_to_json",
	"json_build_object", "jsonb_build_object", "json_build_array", "jsonb_build_array", "json_object", "jsonb_object",
	"json_array_length", "jsonb_array_length", "json_typeof", "jsonb_typeof",
	"json_extract_path", "json_extract_path_text", "jsonb_extract_path", "jsonb_extract_path_text",
	"json_each", "jsonb_each", "json_each_text", "jsonb_each_text", "json_object_keys", "jsonb_object_keys",
	"json_array_elements", "jsonb_array_elements", "json_array_elements_text", "jsonb_array_elements_text",
	"json_strip_nulls", "jsonb_strip_nulls", "jsonb_pretty", "jsonb_set", "jsonb_insert",
	"jsonb_path_exists", "jsonb_path_match", "jsonb_path_query", "jsonb_path_query_array", "jsonb_path_query_first",
	"json_populate_record", "jsonb_populate_record", "json_to_record", "jsonb_to_record",
	"json_to_recordset", "jsonb_to_recordset",
	// arrays and sets
	"array_length", "array_lower", "array_upper", "array_dims", "array_ndims", "cardinality",
	"array_append", "array_prepend", "array_cat", "array_position", "array_positions",
	"array_remove", "array_replace", "unnest", "generate_series", "generate_subscripts", "trim_array",
	// conditional and comparison
	"nullif", "coalesce", "greatest", "least", "num_nulls", "num_nonnulls",
	// type names used as casts
	"date", "time", "timestamp", "timestamptz", "interval", "text", "varchar", "bpchar", "numeric",
	"int", "int2", "int4", "int8", "integer", "smallint", "bigint", "float4", "float8", "bool", "boolean",
)

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// functionAllowed reports whether a call of the function named by parts
// (as the parser gives them: [schema,] name) is allowed: a built-in on the
// allowlist, or a user-defined function the catalog knows as IMMUTABLE or
// STABLE (PostgreSQL refuses writes inside those). It says why not.
func functionAllowed(parts []string, cat *catalog.Catalog) (bool, string) {
	name := strings.ToLower(parts[len(parts)-1])
	qualified := len(parts) > 1
	if (!qualified || strings.ToLower(parts[0]) == "pg_catalog") && readOnlyFunctions[name] {
		return true, ""
	}
	if cat != nil && (!qualified || strings.ToLower(parts[0]) != "pg_catalog") {
		if f := cat.LookupFunction(strings.Join(parts, ".")); f != nil {
			if f.Volatility == "immutable" || f.Volatility == "stable" {
				return true, ""
			}
			return false, "is " + strings.ToUpper(f.Volatility) + " in the catalog: it may change data"
		}
	}
	return false, "is not a known read-only built-in, nor a STABLE or IMMUTABLE function of the catalog"
}
