//! Parser: every statement form, every window, precedence, and error positions.

use hwdb::ast::*;
use hwdb::parser::parse;

fn sel(src: &str) -> Select {
    match parse(src).unwrap_or_else(|e| panic!("{src}: {e}")) {
        Statement::Select(s) => s,
        other => panic!("not a select: {other:?}"),
    }
}

fn err(src: &str) -> String {
    parse(src).expect_err(src).message
}

#[test]
fn create_table_forms() {
    let Statement::CreateTable(ct) = parse("create table Links (mac varchar(17), rssi real, retries integer, ok boolean, c character, b blob(8), t tinyint, s smallint, ts tstamp)").unwrap() else { panic!() };
    assert!(!ct.persistent);
    assert_eq!(ct.columns.len(), 9);
    assert_eq!(ct.columns[0].ty, hwdb::value::ColType::Varchar(17));
    let Statement::CreateTable(ct) = parse("CREATE PERSISTENTTABLE Leases (macaddr varchar(17) primary key, ipaddr varchar(16))").unwrap() else { panic!() };
    assert!(ct.persistent && ct.columns[0].primary_key);
}

#[test]
fn insert_forms() {
    let Statement::Insert(i) = parse("insert into T values ('123', '1.5', 'true', '@00ff@', \"str\", 42, -3.25, @10@, false)").unwrap() else { panic!() };
    let lits: Vec<Literal> = i.values.into_iter().map(|v| v.0).collect();
    assert_eq!(
        lits,
        vec![
            Literal::Quoted("123".into()),
            Literal::Quoted("1.5".into()),
            Literal::Quoted("true".into()),
            Literal::Quoted("@00ff@".into()),
            Literal::Quoted("str".into()),
            Literal::Number("42".into()),
            Literal::Number("-3.25".into()),
            Literal::Tstamp(16),
            Literal::Bool(false),
        ]
    );
    let Statement::Insert(i) = parse("insert into Leases values ('aa', '10.0.0.1') on duplicate key update").unwrap() else { panic!() };
    assert!(i.upsert);
    let Statement::Insert(i) = parse("insert into T values ('it''s', 'a\\nb')").unwrap() else { panic!() };
    assert_eq!(i.values[0].0, Literal::Quoted("it's".into()));
    assert_eq!(i.values[1].0, Literal::Quoted("a\nb".into()));
}

#[test]
fn select_forms() {
    assert!(sel("select * from T").items.is_empty());
    let s = sel("select mac, count(*), min(rssi), max(rssi), avg(rssi), sum(bytes) from Links group by mac order by mac desc, count(*) limit 5");
    assert_eq!(s.items.len(), 6);
    assert_eq!(s.items[1], SelectItem::Agg(Aggregate::Count, None));
    assert_eq!(s.items[5].label(), "sum(bytes)");
    assert_eq!(s.group_by, vec!["mac".to_string()]);
    assert_eq!(s.order_by.len(), 2);
    assert!(s.order_by[0].descending && !s.order_by[1].descending);
    assert_eq!(s.limit, Some(5));
}

#[test]
fn every_window() {
    use TimeUnit::*;
    for (text, unit) in [("millis", Millis), ("seconds", Seconds), ("minutes", Minutes), ("hours", Hours), ("second", Seconds)] {
        assert_eq!(sel(&format!("select * from T [range 10 {text}]")).window, Some(Window::Range { amount: 10, unit }));
    }
    assert_eq!(sel("select * from T [rows 3]").window, Some(Window::Rows(3)));
    assert_eq!(sel("select * from T [last]").window, Some(Window::Last));
    assert_eq!(sel("select * from T [now]").window, Some(Window::Now));
    assert_eq!(sel("select * from T [since @1f@]").window, Some(Window::Since(31)));
    assert_eq!(sel("select * from T [since 1970/01/01:00:00:01]").window, Some(Window::Since(1_000_000_000)));
    assert_eq!(
        sel("select * from T [interval (@1@, @2@)]").window,
        Some(Window::Interval { from: 1, from_inclusive: false, to: 2, to_inclusive: false })
    );
    assert_eq!(
        sel("select * from T [interval [@1@, @2@]]").window,
        Some(Window::Interval { from: 1, from_inclusive: true, to: 2, to_inclusive: true })
    );
    assert_eq!(
        sel("select * from T [interval [1, 5)]").window,
        Some(Window::Interval { from: 1, from_inclusive: true, to: 5, to_inclusive: false })
    );
}

fn cmp(col: &str) -> impl Fn(&Expr) -> bool + '_ {
    move |e| matches!(e, Expr::Cmp { column, .. } if column == col)
}

#[test]
fn and_binds_tighter_than_or() {
    let s = sel("select * from T where a = 1 or b = 2 and c = 3");
    let Some(Expr::Or(l, r)) = s.filter else { panic!("top must be OR") };
    assert!(cmp("a")(&l));
    let Expr::And(rl, rr) = *r else { panic!("right must be AND") };
    assert!(cmp("b")(&rl) && cmp("c")(&rr));
}

#[test]
fn parentheses_override_precedence() {
    let s = sel("select * from T where (a = 1 or b = 2) and not c != 3");
    let Some(Expr::And(l, r)) = s.filter else { panic!("top must be AND") };
    assert!(matches!(*l, Expr::Or(..)));
    let Expr::Not(inner) = *r else { panic!() };
    assert!(matches!(*inner, Expr::Cmp { op: CmpOp::Ne, .. }));
}

#[test]
fn every_operator() {
    for (text, op) in [
        ("=", CmpOp::Eq),
        ("!=", CmpOp::Ne),
        ("<>", CmpOp::Ne),
        ("<", CmpOp::Lt),
        (">", CmpOp::Gt),
        ("<=", CmpOp::Le),
        (">=", CmpOp::Ge),
        ("contains", CmpOp::Contains),
        ("notcontains", CmpOp::NotContains),
    ] {
        let s = sel(&format!("select * from T where name {text} 'x'"));
        assert!(matches!(s.filter, Some(Expr::Cmp { op: o, .. }) if o == op), "{text}");
    }
    let s = sel("select * from T where timestamp > @0a@");
    assert!(matches!(s.filter, Some(Expr::Cmp { value: Literal::Tstamp(10), .. })));
}

#[test]
fn other_statements() {
    let Statement::Update(u) = parse("update Devices set state = 'deny', hits += 1, credit -= 2.5 where mac = 'aa'").unwrap() else { panic!() };
    assert_eq!(u.assignments.iter().map(|a| a.op).collect::<Vec<_>>(), vec![AssignOp::Set, AssignOp::Add, AssignOp::Sub]);
    assert!(matches!(parse("delete from Devices where mac = 'aa'").unwrap(), Statement::Delete(_)));
    assert!(matches!(parse("delete from Devices").unwrap(), Statement::Delete(Delete { filter: None, .. })));
    assert_eq!(parse("show tables;").unwrap(), Statement::ShowTables);
    assert_eq!(parse("show queries").unwrap(), Statement::ShowQueries);
    assert_eq!(parse("SHOW subscriptions").unwrap(), Statement::ShowSubscriptions);
    let Statement::SaveQuery { name, text, .. } = parse("save (select * from Links [rows 5]) as Recent").unwrap() else { panic!() };
    assert_eq!((name.as_str(), text.as_str()), ("Recent", "select * from Links [rows 5]"));
    assert!(matches!(parse("save select * from Links as Q2").unwrap(), Statement::SaveQuery { .. }));
    assert_eq!(parse("exec Recent").unwrap(), Statement::ExecQuery("Recent".into()));
    assert_eq!(parse("delete query Recent").unwrap(), Statement::DeleteQuery("Recent".into()));
    let sub = Subscription { query: "Recent".into(), host: "127.0.0.1".into(), port: 5000, service: "CB".into() };
    assert_eq!(parse("subscribe Recent 127.0.0.1 5000 CB").unwrap(), Statement::Subscribe(sub.clone()));
    assert_eq!(parse("unsubscribe Recent 127.0.0.1 5000 CB").unwrap(), Statement::Unsubscribe(sub));
}

#[test]
fn errors_say_what_and_where() {
    // Columns are 1-based characters.
    assert_eq!(err("select * from T where (a = 1"), "syntax error at 29: expected ')', found end of statement");
    assert_eq!(err("select * frm T"), "syntax error at 10: expected 'from', found 'frm'");
    assert_eq!(err("select * from T [range 10 fortnights]"), "syntax error at 27: expected a time unit (millis, seconds, minutes, hours)");
    assert_eq!(err("select * from T [rows]"), "syntax error at 22: expected a row count, found ']'");
    assert_eq!(err("select * from T [interval (1, 2}"), "syntax error at 32: unexpected character '}'");
    assert_eq!(err("select * from T where a ~ 1"), "syntax error at 25: unexpected character '~'");
    assert_eq!(err("select * from T where a = "), "syntax error at 27: expected a value, found end of statement");
    assert_eq!(err("insert into T values ('abc"), "syntax error at 23: unterminated string");
    assert_eq!(err("create table T (a widget)"), "syntax error at 19: unknown type 'widget' (boolean, integer, real, character, varchar(N), blob(N), tinyint, smallint, tstamp)");
    assert_eq!(err("select * from T limit 5 garbage"), "syntax error at 25: expected end of statement, found 'garbage'");
    assert!(err("frobnicate").starts_with("syntax error at 1: expected a statement"));
    assert!(err("select sum(*) from T").contains("sum(*) is not allowed"));
    assert!(err("select * from T [since @zz@]").starts_with("syntax error at 24: bad timestamp"));
    // Positions count characters, not bytes.
    assert_eq!(err("select * from T where name = 'é' and"), "syntax error at 37: expected a column name or '(', found end of statement");
}

#[test]
fn absurd_windows_are_refused() {
    assert!(err("select * from T [range 99999999999999999999 seconds]").contains("too large"));
    assert!(err("select * from T [range 9999999999999 hours]").contains("range is too large"));
    assert!(err("select * from T [rows -1]").contains("expected a row count"));
}
