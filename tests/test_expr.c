/* The ${...} evaluator alone (src/io/expr.c): precedence, C division
 * semantics, overflow and division by zero as errors, names, text params,
 * substitution inside attribute values. Expected values are computed by
 * hand in the comments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "io/expr-impl.h"

static const ntp_expr_var vars[] = {
    {"batch", "8", 2},  {"hidden", "256", 3}, {"act", "relu", 4},
    {"dw", "true", 5},  {"neg", "-3", 6},     {"big", "9223372036854775807", 7},
    {"later", "5", 40}, {"i", "2", 0},
};
static const ntp_expr_env env = {vars, (int)(sizeof vars / sizeof vars[0]), 20};

static ntp_status eval(const char *s, int64_t *v, char *err, size_t len)
{
    return ntp__expr_eval(s, strlen(s), &env, v, err, len);
}

/* Evaluate and expect success with value `want`. */
static void check_value(const char *s, int64_t want)
{
    char err[256] = "";
    int64_t v = 0;
    ntp_status st = eval(s, &v, err, sizeof err);
    if (st != NTP_STATUS_OK)
        print_error("expression '%s' failed: %s\n", s, err);
    assert_int_equal(st, NTP_STATUS_OK);
    assert_int_equal(v, want);
}

/* Evaluate and expect failure `want` with `needle` in the message. */
static void check_error(const char *s, ntp_status want, const char *needle)
{
    char err[256] = "";
    int64_t v = 0;
    ntp_status st = eval(s, &v, err, sizeof err);
    assert_int_equal(st, want);
    if (!strstr(err, needle))
        print_error("message for '%s' is '%s', expected it to contain '%s'\n", s, err, needle);
    assert_non_null(strstr(err, needle));
}

static void test_precedence(void **state)
{
    (void)state;
    check_value("1+2*3", 7);
    check_value("(1+2)*3", 9);
    check_value("2*3+4*5", 26);
    check_value("10-4-3", 3);    /* left-associative: (10-4)-3 */
    check_value("100/10/5", 2);  /* (100/10)/5 */
    check_value("2+12/4*3", 11); /* 2 + ((12/4)*3) */
    check_value(" 7 ", 7);
    check_value("((((42))))", 42);
    check_value("hidden*2 + 1", 513);
    check_value("(batch-1)*160+400", 1520);
}

static void test_unary_minus(void **state)
{
    (void)state;
    check_value("-5", -5);
    check_value("--5", 5);
    check_value("-(2+3)*2", -10);
    check_value("3*-2", -6);
    check_value("+4", 4);
    check_value("-neg", 3);
    check_value("-9223372036854775807-1", INT64_MIN);
}

static void test_division_c_semantics(void **state)
{
    (void)state;
    check_value("7/2", 3);
    check_value("-7/2", -3); /* truncation toward zero */
    check_value("7/-2", -3);
    check_value("7%3", 1);
    check_value("-7%3", -1); /* the sign follows the dividend */
    check_value("7%-3", 1);
    check_value("(-9223372036854775807-1)%-1", 0);
    check_error("1/0", NTP_STATUS_PARSE_ERROR, "division by zero");
    check_error("5%(3-3)", NTP_STATUS_PARSE_ERROR, "division by zero");
}

static void test_overflow(void **state)
{
    (void)state;
    check_value("9223372036854775807", INT64_MAX);
    check_error("9223372036854775808", NTP_STATUS_OVERFLOW, "does not fit in 64 bits");
    check_error("big+1", NTP_STATUS_OVERFLOW, "overflow in '+'");
    check_error("-big-2", NTP_STATUS_OVERFLOW, "overflow in '-'");
    check_error("1000000000*1000000000*1000000000", NTP_STATUS_OVERFLOW, "overflow in '*'");
    check_error("(-9223372036854775807-1)/-1", NTP_STATUS_OVERFLOW, "overflow in '/'");
    check_error("-(-9223372036854775807-1)", NTP_STATUS_OVERFLOW, "unary minus");
}

static void test_names(void **state)
{
    (void)state;
    check_value("i*10+batch", 28);
    check_error("hiden*2", NTP_STATUS_UNKNOWN_NAME, "unknown name 'hiden'; did you mean 'hidden'?");
    check_error("zzzzzz", NTP_STATUS_UNKNOWN_NAME, "unknown name 'zzzzzz'");
    check_error("act+1", NTP_STATUS_PARSE_ERROR, "'act' is 'relu', not an integer");
    /* Declared on line 40, used on line 20. */
    check_error("later*2", NTP_STATUS_UNKNOWN_NAME, "used before its declaration on line 40");
}

static void test_syntax_errors(void **state)
{
    (void)state;
    check_error("", NTP_STATUS_PARSE_ERROR, "empty expression");
    check_error("   ", NTP_STATUS_PARSE_ERROR, "empty expression");
    check_error("1+", NTP_STATUS_PARSE_ERROR, "expected a number, a name or '(' at the end");
    check_error("(1+2", NTP_STATUS_PARSE_ERROR, "expected ')' at the end");
    check_error("1 2", NTP_STATUS_PARSE_ERROR, "unexpected text at '2' (column 3)");
    check_error("2*x1y)", NTP_STATUS_UNKNOWN_NAME, "unknown name 'x1y'");
    check_error("3abc", NTP_STATUS_PARSE_ERROR, "expected an integer at 'a'");
    check_error("1.5*2", NTP_STATUS_PARSE_ERROR, "expected an integer at '.'");
    check_error("a${b", NTP_STATUS_PARSE_ERROR, "nested ${...} is not allowed");
    check_error("1 ^ 2", NTP_STATUS_PARSE_ERROR, "unexpected text at '^'");
    /* Nesting is bounded, so hostile input cannot exhaust the stack. */
    char deep[300];
    memset(deep, '(', 200);
    strcpy(deep + 200, "1");
    check_error(deep, NTP_STATUS_PARSE_ERROR, "nests deeper than 64 levels");
    memset(deep, '-', 200);
    strcpy(deep + 200, "1");
    check_error(deep, NTP_STATUS_PARSE_ERROR, "nests deeper than 64 levels");
}

/* Substitute and expect `want`. */
static void check_subst(const char *s, const char *want)
{
    char err[256] = "", *out = NULL;
    ntp_status st = ntp__expr_subst(s, &env, &out, err, sizeof err);
    if (st != NTP_STATUS_OK)
        print_error("substituting '%s' failed: %s\n", s, err);
    assert_int_equal(st, NTP_STATUS_OK);
    assert_string_equal(out, want);
    free(out);
}

static void check_subst_error(const char *s, ntp_status want, const char *needle)
{
    char err[256] = "", *out = (char *)"not touched";
    ntp_status st = ntp__expr_subst(s, &env, &out, err, sizeof err);
    assert_int_equal(st, want);
    assert_null(out);
    if (!strstr(err, needle))
        print_error("message for '%s' is '%s', expected it to contain '%s'\n", s, err, needle);
    assert_non_null(strstr(err, needle));
}

static void test_subst(void **state)
{
    (void)state;
    check_subst("plain", "plain");
    check_subst("", "");
    check_subst("enc${i}_ln", "enc2_ln");
    check_subst("${batch},${(batch-1)*160+400}", "8,1520");
    check_subst("${hidden*2 + 1}", "513");
    check_subst("${act}", "relu"); /* text param substituted as text */
    check_subst("${ dw }", "true");
    check_subst("x${act}y${i}", "xreluy2");
    check_subst("$5 and {braces}", "$5 and {braces}"); /* no "${": literal */
    check_subst("${-neg}", "3");
    check_subst("${neg}", "-3");
}

static void test_subst_errors(void **state)
{
    (void)state;
    check_subst_error("a${b", NTP_STATUS_PARSE_ERROR, "unterminated '${' in '${b'");
    check_subst_error("${a${i}}", NTP_STATUS_PARSE_ERROR, "${a${i}: nested ${...} is not allowed");
    check_subst_error("${}", NTP_STATUS_PARSE_ERROR, "${}: empty expression");
    check_subst_error("n${hiden}", NTP_STATUS_UNKNOWN_NAME,
                      "${hiden}: unknown name 'hiden'; did you mean 'hidden'?");
    check_subst_error("${10/(i-2)}", NTP_STATUS_PARSE_ERROR, "${10/(i-2)}: division by zero");
    check_subst_error("${act*2}", NTP_STATUS_PARSE_ERROR, "'act' is 'relu', not an integer");
    check_subst_error("${later}", NTP_STATUS_UNKNOWN_NAME, "used before its declaration");
}

static void test_parse_int(void **state)
{
    (void)state;
    int64_t v = 0;
    assert_true(ntp__expr_parse_int("42", &v));
    assert_int_equal(v, 42);
    assert_true(ntp__expr_parse_int(" -7 ", &v));
    assert_int_equal(v, -7);
    assert_false(ntp__expr_parse_int("0x10", &v));
    assert_false(ntp__expr_parse_int("12abc", &v));
    assert_false(ntp__expr_parse_int("", &v));
    assert_false(ntp__expr_parse_int("9223372036854775808", &v));
    assert_false(ntp__expr_parse_int("1e3", &v));
    assert_true(ntp__expr_is_ident("_a1"));
    assert_false(ntp__expr_is_ident("1a"));
    assert_false(ntp__expr_is_ident("a-b"));
    assert_false(ntp__expr_is_ident(""));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_precedence),
        cmocka_unit_test(test_unary_minus),
        cmocka_unit_test(test_division_c_semantics),
        cmocka_unit_test(test_overflow),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_syntax_errors),
        cmocka_unit_test(test_subst),
        cmocka_unit_test(test_subst_errors),
        cmocka_unit_test(test_parse_int),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
