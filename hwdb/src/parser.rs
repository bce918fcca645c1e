//! Recursive-descent parser for the hwdb language. Every error names what was
//! expected and the 1-based column where the parser stopped.

use crate::ast::*;
use crate::error::{HwdbError, Result};
use crate::lexer::{tokenize, Tok, Token};
use crate::value::{parse_datetime, ColType};

pub fn parse(src: &str) -> Result<Statement> {
    let tokens = tokenize(src)?;
    let mut p = Parser { src, tokens, i: 0 };
    let stmt = p.statement()?;
    p.eat_sym(";");
    if p.peek() != &Tok::End {
        return Err(p.expected("end of statement"));
    }
    Ok(stmt)
}

struct Parser<'a> {
    src: &'a str,
    tokens: Vec<Token>,
    i: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> &Tok {
        &self.tokens[self.i].tok
    }

    fn pos(&self) -> usize {
        self.tokens[self.i].pos
    }

    fn advance(&mut self) -> Tok {
        let t = self.tokens[self.i].tok.clone();
        if self.i + 1 < self.tokens.len() {
            self.i += 1;
        }
        t
    }

    fn expected(&self, what: &str) -> HwdbError {
        HwdbError::syntax(self.src, self.pos(), &format!("expected {what}, found {}", self.peek().describe()))
    }

    fn is_kw(&self, kw: &str) -> bool {
        matches!(self.peek(), Tok::Ident(s) if s.eq_ignore_ascii_case(kw))
    }

    fn eat_kw(&mut self, kw: &str) -> bool {
        if self.is_kw(kw) {
            self.advance();
            true
        } else {
            false
        }
    }

    fn expect_kw(&mut self, kw: &str) -> Result<()> {
        if self.eat_kw(kw) {
            Ok(())
        } else {
            Err(self.expected(&format!("'{kw}'")))
        }
    }

    fn eat_sym(&mut self, sym: &str) -> bool {
        if matches!(self.peek(), Tok::Sym(s) if *s == sym) {
            self.advance();
            true
        } else {
            false
        }
    }

    fn expect_sym(&mut self, sym: &str) -> Result<()> {
        if self.eat_sym(sym) {
            Ok(())
        } else {
            Err(self.expected(&format!("'{sym}'")))
        }
    }

    fn ident(&mut self, what: &str) -> Result<String> {
        match self.peek() {
            Tok::Ident(s) => {
                let s = s.clone();
                self.advance();
                Ok(s)
            }
            _ => Err(self.expected(what)),
        }
    }

    fn unsigned(&mut self, what: &str) -> Result<u64> {
        match self.peek() {
            Tok::Number(n) if !n.contains('.') => {
                let v = n.parse::<u64>().map_err(|_| {
                    HwdbError::syntax(self.src, self.pos(), &format!("{what} {n} is too large"))
                })?;
                self.advance();
                Ok(v)
            }
            _ => Err(self.expected(what)),
        }
    }

    fn statement(&mut self) -> Result<Statement> {
        match self.peek() {
            Tok::Ident(s) => match s.to_ascii_lowercase().as_str() {
                "create" => self.create(),
                "insert" => self.insert(),
                "select" => Ok(Statement::Select(self.select()?)),
                "update" => self.update(),
                "delete" => self.delete(),
                "show" => {
                    self.advance();
                    if self.eat_kw("tables") {
                        Ok(Statement::ShowTables)
                    } else if self.eat_kw("queries") {
                        Ok(Statement::ShowQueries)
                    } else if self.eat_kw("subscriptions") {
                        Ok(Statement::ShowSubscriptions)
                    } else {
                        Err(self.expected("'tables', 'queries' or 'subscriptions'"))
                    }
                }
                "save" => self.save(),
                "exec" => {
                    self.advance();
                    Ok(Statement::ExecQuery(self.ident("query name")?))
                }
                "subscribe" => {
                    self.advance();
                    Ok(Statement::Subscribe(self.subscription()?))
                }
                "unsubscribe" => {
                    self.advance();
                    Ok(Statement::Unsubscribe(self.subscription()?))
                }
                _ => Err(self.expected("a statement (create, insert, select, update, delete, show, save, exec, subscribe, unsubscribe)")),
            },
            _ => Err(self.expected("a statement")),
        }
    }

    fn create(&mut self) -> Result<Statement> {
        self.expect_kw("create")?;
        let persistent = if self.eat_kw("table") {
            false
        } else if self.eat_kw("persistenttable") {
            true
        } else {
            return Err(self.expected("'table' or 'persistenttable'"));
        };
        let name = self.ident("table name")?;
        self.expect_sym("(")?;
        let mut columns = Vec::new();
        loop {
            let cpos = self.pos();
            let cname = self.ident("column name")?;
            if cname.eq_ignore_ascii_case("timestamp") {
                return Err(HwdbError::syntax(self.src, cpos, "'timestamp' is implicit and cannot be declared"));
            }
            let ty = self.col_type()?;
            let primary_key = if self.eat_kw("primary") {
                self.expect_kw("key")?;
                true
            } else {
                false
            };
            columns.push(ColumnDef { name: cname, ty, primary_key });
            if !self.eat_sym(",") {
                break;
            }
        }
        self.expect_sym(")")?;
        Ok(Statement::CreateTable(CreateTable { name, persistent, columns }))
    }

    fn col_type(&mut self) -> Result<ColType> {
        let pos = self.pos();
        let name = self.ident("column type")?.to_ascii_lowercase();
        let sized = |p: &mut Self| -> Result<u32> {
            p.expect_sym("(")?;
            let n = p.unsigned("size")?;
            p.expect_sym(")")?;
            if n == 0 || n > 1 << 20 {
                return Err(HwdbError::syntax(p.src, pos, "size must be between 1 and 1048576"));
            }
            Ok(n as u32)
        };
        Ok(match name.as_str() {
            "boolean" | "bool" => ColType::Boolean,
            "integer" | "int" => ColType::Integer,
            "real" | "float" | "double" => ColType::Real,
            "character" | "char" => ColType::Character,
            "varchar" => ColType::Varchar(sized(self)?),
            "blob" => ColType::Blob(sized(self)?),
            "tinyint" => ColType::Tinyint,
            "smallint" => ColType::Smallint,
            "tstamp" => ColType::Tstamp,
            _ => {
                return Err(HwdbError::syntax(
                    self.src,
                    pos,
                    &format!("unknown type '{name}' (boolean, integer, real, character, varchar(N), blob(N), tinyint, smallint, tstamp)"),
                ))
            }
        })
    }

    fn literal(&mut self) -> Result<Literal> {
        let negative = self.eat_sym("-");
        if !negative {
            self.eat_sym("+");
        }
        let lit = match self.peek().clone() {
            Tok::Number(n) => Literal::Number(if negative { format!("-{n}") } else { n }),
            _ if negative => return Err(self.expected("a number after '-'")),
            Tok::Str(s) => Literal::Quoted(s),
            Tok::Tstamp(t) => Literal::Tstamp(t),
            Tok::Word(w) => Literal::Quoted(w),
            Tok::Ident(s) if s.eq_ignore_ascii_case("true") => Literal::Bool(true),
            Tok::Ident(s) if s.eq_ignore_ascii_case("false") => Literal::Bool(false),
            _ => return Err(self.expected("a value")),
        };
        self.advance();
        Ok(lit)
    }

    fn insert(&mut self) -> Result<Statement> {
        self.expect_kw("insert")?;
        self.expect_kw("into")?;
        let table = self.ident("table name")?;
        self.expect_kw("values")?;
        self.expect_sym("(")?;
        let mut values = Vec::new();
        loop {
            let pos = self.pos();
            values.push((self.literal()?, pos));
            if !self.eat_sym(",") {
                break;
            }
        }
        self.expect_sym(")")?;
        let upsert = if self.eat_kw("on") {
            self.expect_kw("duplicate")?;
            self.expect_kw("key")?;
            self.expect_kw("update")?;
            true
        } else {
            false
        };
        Ok(Statement::Insert(Insert { table, values, upsert }))
    }

    fn select_item(&mut self) -> Result<SelectItem> {
        let pos = self.pos();
        let name = self.ident("a column or aggregate")?;
        let agg = match name.to_ascii_lowercase().as_str() {
            "count" => Some(Aggregate::Count),
            "min" => Some(Aggregate::Min),
            "max" => Some(Aggregate::Max),
            "avg" => Some(Aggregate::Avg),
            "sum" => Some(Aggregate::Sum),
            _ => None,
        };
        match agg {
            Some(a) if self.eat_sym("(") => {
                let col = if self.eat_sym("*") {
                    if a != Aggregate::Count {
                        return Err(HwdbError::syntax(self.src, pos, &format!("{}(*) is not allowed, name a column", a.name())));
                    }
                    None
                } else {
                    Some(self.ident("a column name")?)
                };
                self.expect_sym(")")?;
                Ok(SelectItem::Agg(a, col))
            }
            _ => Ok(SelectItem::Column(name)),
        }
    }

    fn select(&mut self) -> Result<Select> {
        self.expect_kw("select")?;
        let mut items = Vec::new();
        if !self.eat_sym("*") {
            loop {
                items.push(self.select_item()?);
                if !self.eat_sym(",") {
                    break;
                }
            }
        }
        self.expect_kw("from")?;
        let table = self.ident("table name")?;
        let window = if self.eat_sym("[") { Some(self.window()?) } else { None };
        let filter = if self.eat_kw("where") { Some(self.expr()?) } else { None };
        let mut group_by = Vec::new();
        if self.eat_kw("group") {
            self.expect_kw("by")?;
            loop {
                group_by.push(self.ident("a column name")?);
                if !self.eat_sym(",") {
                    break;
                }
            }
        }
        let mut order_by = Vec::new();
        if self.eat_kw("order") {
            self.expect_kw("by")?;
            loop {
                let item = self.select_item()?;
                let descending = if self.eat_kw("desc") {
                    true
                } else {
                    self.eat_kw("asc");
                    false
                };
                order_by.push(OrderKey { item, descending });
                if !self.eat_sym(",") {
                    break;
                }
            }
        }
        let limit = if self.eat_kw("limit") { Some(self.unsigned("a row count")?) } else { None };
        Ok(Select { items, table, window, filter, group_by, order_by, limit })
    }

    /// After the `[`: the window body and the closing `]`.
    fn window(&mut self) -> Result<Window> {
        let pos = self.pos();
        let kw = self.ident("a window (range, rows, last, now, since, interval)")?.to_ascii_lowercase();
        let w = match kw.as_str() {
            "range" => {
                let amount = self.unsigned("a number")?;
                let upos = self.pos();
                let unit = self.ident("a time unit")?.to_ascii_lowercase();
                let unit = match unit.as_str() {
                    "millis" | "millisecond" | "milliseconds" | "ms" => TimeUnit::Millis,
                    "second" | "seconds" | "sec" | "secs" | "s" => TimeUnit::Seconds,
                    "minute" | "minutes" | "min" | "mins" => TimeUnit::Minutes,
                    "hour" | "hours" | "h" => TimeUnit::Hours,
                    _ => return Err(HwdbError::syntax(self.src, upos, "expected a time unit (millis, seconds, minutes, hours)")),
                };
                if amount > (i64::MAX / unit.nanos()) as u64 {
                    return Err(HwdbError::syntax(self.src, pos, "range is too large"));
                }
                Window::Range { amount: amount as i64, unit }
            }
            "rows" => Window::Rows(self.unsigned("a row count")?),
            "last" => Window::Last,
            "now" => Window::Now,
            "since" => Window::Since(self.time_point()?),
            "interval" => {
                let from_inclusive = if self.eat_sym("[") {
                    true
                } else if self.eat_sym("(") {
                    false
                } else {
                    return Err(self.expected("'(' or '['"));
                };
                let from = self.time_point()?;
                self.expect_sym(",")?;
                let to = self.time_point()?;
                let to_inclusive = if self.eat_sym("]") {
                    true
                } else if self.eat_sym(")") {
                    false
                } else {
                    return Err(self.expected("')' or ']'"));
                };
                Window::Interval { from, from_inclusive, to, to_inclusive }
            }
            _ => return Err(HwdbError::syntax(self.src, pos, "expected a window (range, rows, last, now, since, interval)")),
        };
        self.expect_sym("]")?;
        Ok(w)
    }

    /// `@hex@`, `YYYY/MM/DD:hh:mm:ss` or a number of nanoseconds.
    fn time_point(&mut self) -> Result<i64> {
        let t = match self.peek().clone() {
            Tok::Tstamp(t) => t,
            Tok::Word(w) => match parse_datetime(&w) {
                Some(t) => t,
                None => return Err(self.expected("a time (@hex@ or YYYY/MM/DD:hh:mm:ss)")),
            },
            Tok::Number(n) if !n.contains('.') => match n.parse::<i64>() {
                Ok(t) => t,
                Err(_) => return Err(self.expected("a time that fits in 64 bits")),
            },
            Tok::Str(s) => match crate::value::parse_tstamp(&s).or_else(|| parse_datetime(&s)) {
                Some(t) => t,
                None => return Err(self.expected("a time (@hex@ or YYYY/MM/DD:hh:mm:ss)")),
            },
            _ => return Err(self.expected("a time (@hex@ or YYYY/MM/DD:hh:mm:ss)")),
        };
        self.advance();
        Ok(t)
    }

    /// expr := and (OR and)*  -- AND binds tighter than OR, as in SQL.
    fn expr(&mut self) -> Result<Expr> {
        let mut left = self.and_expr()?;
        while self.eat_kw("or") {
            let right = self.and_expr()?;
            left = Expr::Or(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn and_expr(&mut self) -> Result<Expr> {
        let mut left = self.unary()?;
        while self.eat_kw("and") {
            let right = self.unary()?;
            left = Expr::And(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Expr> {
        if self.eat_kw("not") {
            return Ok(Expr::Not(Box::new(self.unary()?)));
        }
        if self.eat_sym("(") {
            let e = self.expr()?;
            self.expect_sym(")")?;
            return Ok(e);
        }
        let pos = self.pos();
        let column = self.ident("a column name or '('")?;
        let op = match self.peek().clone() {
            Tok::Sym("=") => CmpOp::Eq,
            Tok::Sym("!=") | Tok::Sym("<>") => CmpOp::Ne,
            Tok::Sym("<") => CmpOp::Lt,
            Tok::Sym(">") => CmpOp::Gt,
            Tok::Sym("<=") => CmpOp::Le,
            Tok::Sym(">=") => CmpOp::Ge,
            Tok::Ident(s) if s.eq_ignore_ascii_case("contains") => CmpOp::Contains,
            Tok::Ident(s) if s.eq_ignore_ascii_case("notcontains") => CmpOp::NotContains,
            _ => return Err(self.expected("an operator (= != < > <= >= contains notcontains)")),
        };
        self.advance();
        let value = self.literal()?;
        Ok(Expr::Cmp { column, op, value, pos })
    }

    fn update(&mut self) -> Result<Statement> {
        self.expect_kw("update")?;
        let table = self.ident("table name")?;
        self.expect_kw("set")?;
        let mut assignments = Vec::new();
        loop {
            let column = self.ident("a column name")?;
            let op = if self.eat_sym("=") {
                AssignOp::Set
            } else if self.eat_sym("+=") {
                AssignOp::Add
            } else if self.eat_sym("-=") {
                AssignOp::Sub
            } else {
                return Err(self.expected("'=', '+=' or '-='"));
            };
            let value = self.literal()?;
            assignments.push(Assignment { column, op, value });
            if !self.eat_sym(",") {
                break;
            }
        }
        let filter = if self.eat_kw("where") { Some(self.expr()?) } else { None };
        Ok(Statement::Update(Update { table, assignments, filter }))
    }

    fn delete(&mut self) -> Result<Statement> {
        self.expect_kw("delete")?;
        if self.eat_kw("query") {
            return Ok(Statement::DeleteQuery(self.ident("query name")?));
        }
        self.expect_kw("from")?;
        let table = self.ident("table name")?;
        let filter = if self.eat_kw("where") { Some(self.expr()?) } else { None };
        Ok(Statement::Delete(Delete { table, filter }))
    }

    /// `save (select ...) as Q`; the parentheses may be omitted.
    fn save(&mut self) -> Result<Statement> {
        self.expect_kw("save")?;
        let paren = self.eat_sym("(");
        let start = self.pos();
        let select = self.select()?;
        let end = self.pos();
        let text = self.src[start..end].trim().to_string();
        if paren {
            self.expect_sym(")")?;
        }
        self.expect_kw("as")?;
        let name = self.ident("query name")?;
        Ok(Statement::SaveQuery { name, select, text })
    }

    /// `Q host port service`
    fn subscription(&mut self) -> Result<Subscription> {
        let query = self.ident("query name")?;
        let host = match self.peek().clone() {
            Tok::Word(w) | Tok::Str(w) | Tok::Ident(w) => {
                self.advance();
                w
            }
            _ => return Err(self.expected("the subscriber's IP address")),
        };
        let ppos = self.pos();
        let port = self.unsigned("the subscriber's port")?;
        if port == 0 || port > 65535 {
            return Err(HwdbError::syntax(self.src, ppos, "port must be 1-65535"));
        }
        let service = match self.peek().clone() {
            Tok::Ident(s) | Tok::Str(s) => {
                self.advance();
                s
            }
            _ => return Err(self.expected("the subscriber's service name")),
        };
        Ok(Subscription { query, host, port: port as u16, service })
    }
}
