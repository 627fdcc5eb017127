//! What a client asks for, whether it sent a function call as a list
//! (`(`.u.sub; `trade; `)`, the form feeds and PyKX use) or q text
//! (`".u.sub[`;`]"`, `"(.u.sub[`;`];`.u `i`L)"`, `"count trade"`). Strata does not
//! run q: the text forms understood are calls `f[a;b]`, `f x`, names, parenthesised
//! lists of those, `` `ns `a`b `` (several names in a namespace), and literals
//! (symbols, strings, integers, dates). Text that is a SQL statement ([`is_sql`]) is
//! a call of `.s.e` with that text, as kdb+'s SQL interface has it. Anything else is
//! an error naming the text.
//!
//! Any client can send text, so parsing is bounded: brackets and applications nest
//! at most [`MAX_REQUEST_DEPTH`] deep (a message of a million `(` is an error, not a
//! stack overflow), and errors quote at most [`QUOTED_TEXT`] bytes of it. The text
//! itself is as long as the message bound lets it be; parsing is linear in it.

use crate::{Atom, K, Vector};

/// How deep brackets, parentheses and applications (`f g h x`) may nest in q text:
/// far beyond any request Strata understands, far below what overflows a thread's
/// stack (the parser takes a few hundred bytes of stack per level).
pub const MAX_REQUEST_DEPTH: usize = 64;
/// Bytes of the text quoted in an error: enough to recognise it, not a copy of a
/// megabyte message in every log line.
pub const QUOTED_TEXT: usize = 80;

/// Resolves one function call of a request: name and evaluated arguments.
pub type Resolver<'a> = dyn FnMut(&str, Vec<K>) -> Result<K, String> + 'a;

/// A parsed request: what to evaluate.
#[derive(Clone, Debug, PartialEq)]
pub enum Request {
    /// Call `name` with arguments (a name alone is a call without arguments).
    Call(String, Vec<Request>),
    /// A value as given.
    Value(K),
    /// Several requests whose results form a list.
    List(Vec<Request>),
}

impl Request {
    /// The request a message carries.
    pub fn from_message(value: K) -> Result<Request, String> {
        match value {
            K::List(mut items) if !items.is_empty() => {
                let head = items.remove(0);
                let Some(name) = head.as_text().map(str::to_string) else {
                    return Err(format!("a call must start with a function name, not a {}", head.describe()));
                };
                // `(".u.sub";x;y)` from PyKX names the function in a string; q text such as
                // "{x}" in that position is not supported.
                Ok(Request::Call(name.trim().to_string(), items.into_iter().map(Request::Value).collect()))
            }
            K::Vector(Vector::Char(text), _) => {
                let text = String::from_utf8_lossy(&text);
                if is_sql(&text) {
                    return Ok(Request::Call(".s.e".into(), vec![Request::Value(K::string(&text))]));
                }
                parse(&text)
            }
            K::Atom(Atom::Symbol(name)) => Ok(Request::Call(name, Vec::new())),
            other => Err(format!("cannot evaluate a {}", other.describe())),
        }
    }

    /// Evaluates the request with `call` resolving each function call.
    pub fn eval(self, call: &mut Resolver<'_>) -> Result<K, String> {
        match self {
            Request::Value(v) => Ok(v),
            Request::Call(name, args) => {
                let args = args.into_iter().map(|a| a.eval(call)).collect::<Result<Vec<_>, _>>()?;
                call(&name, args)
            }
            Request::List(items) => Ok(K::List(items.into_iter().map(|r| r.eval(call)).collect::<Result<_, _>>()?)),
        }
    }
}

/// Whether `text` is a SQL statement: its first word is a SQL keyword that starts a
/// query (`SELECT`, `WITH`, `EXPLAIN`, `SHOW`, `DESCRIBE`, `VALUES`, in any case),
/// and it is not q's own `select from t`.
pub fn is_sql(text: &str) -> bool {
    let text = text.trim_start();
    let first: String = text.chars().take_while(char::is_ascii_alphabetic).collect();
    match first.to_ascii_lowercase().as_str() {
        "select" => !(first == "select" && text[first.len()..].split_whitespace().next() == Some("from")),
        "with" | "explain" | "show" | "describe" | "values" => true,
        _ => false,
    }
}

/// Parses q text of the supported forms.
pub fn parse(text: &str) -> Result<Request, String> {
    // `\l .` is how kdb+'s RDB tells an HDB to reload its database.
    if let Some(dir) = text.trim().strip_prefix("\\l") {
        return Ok(Request::Call("\\l".into(), vec![Request::Value(K::string(dir.trim()))]));
    }
    let mut p = Parser { s: text.trim().as_bytes(), i: 0, text, depth: 0 };
    let request = p.expr()?;
    p.skip_space();
    if p.i != p.s.len() {
        return Err(p.fail("end of input"));
    }
    Ok(request)
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    text: &'a str,
    /// Expressions open around the one being read.
    depth: usize,
}

impl Parser<'_> {
    fn fail(&self, wanted: &str) -> String {
        format!("cannot evaluate {}: expected {wanted} at character {}", self.quoted(), self.i + 1)
    }

    /// The text in quotes, cut to [`QUOTED_TEXT`] bytes.
    fn quoted(&self) -> String {
        match self.text.char_indices().nth(QUOTED_TEXT) {
            Some((cut, _)) => format!("{:?}... ({} bytes)", &self.text[..cut], self.text.len()),
            None => format!("{:?}", self.text),
        }
    }

    /// One expression, at most [`MAX_REQUEST_DEPTH`] inside others.
    fn expr(&mut self) -> Result<Request, String> {
        if self.depth >= MAX_REQUEST_DEPTH {
            return Err(format!(
                "cannot evaluate {}: expressions nest deeper than {MAX_REQUEST_DEPTH} levels at character {}",
                self.quoted(),
                self.i + 1
            ));
        }
        self.depth += 1;
        let request = self.nested_expr();
        self.depth -= 1;
        request
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn skip_space(&mut self) {
        while self.peek() == Some(b' ') {
            self.i += 1;
        }
    }

    fn name(&mut self) -> String {
        let start = self.i;
        while let Some(c) = self.peek() {
            if c.is_ascii_alphanumeric() || c == b'.' || c == b'_' || c == b'\\' {
                self.i += 1;
            } else {
                break;
            }
        }
        String::from_utf8_lossy(&self.s[start..self.i]).into_owned()
    }

    fn symbols(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        while self.peek() == Some(b'`') {
            self.i += 1;
            out.push(self.name());
        }
        out
    }

    fn nested_expr(&mut self) -> Result<Request, String> {
        self.skip_space();
        match self.peek() {
            Some(b'(') => {
                self.i += 1;
                let mut items = vec![self.expr()?];
                loop {
                    self.skip_space();
                    match self.peek() {
                        Some(b';') => {
                            self.i += 1;
                            items.push(self.expr()?);
                        }
                        Some(b')') => {
                            self.i += 1;
                            return Ok(Request::List(items));
                        }
                        _ => return Err(self.fail("; or )")),
                    }
                }
            }
            Some(b'`') => {
                let syms = self.symbols();
                self.skip_space();
                // `` `.u `i`L ``: names in a namespace.
                if syms.len() == 1 && self.peek() == Some(b'`') {
                    let names = self.symbols();
                    let ns = &syms[0];
                    return Ok(Request::List(
                        names.iter().map(|n| Request::Call(format!("{ns}.{n}"), vec![])).collect(),
                    ));
                }
                Ok(Request::Value(if syms.len() == 1 { K::symbol(syms[0].clone()) } else { K::symbols(syms) }))
            }
            Some(b'"') => {
                self.i += 1;
                let start = self.i;
                while self.peek().is_some_and(|c| c != b'"') {
                    self.i += 1;
                }
                if self.peek() != Some(b'"') {
                    return Err(self.fail("a closing \""));
                }
                let s = String::from_utf8_lossy(&self.s[start..self.i]).into_owned();
                self.i += 1;
                Ok(Request::Value(K::string(&s)))
            }
            Some(c) if c.is_ascii_digit() || c == b'-' => self.number(),
            Some(c) if c.is_ascii_alphabetic() || c == b'.' || c == b'\\' => {
                let name = self.name();
                match self.peek() {
                    Some(b'[') => {
                        self.i += 1;
                        let mut args = Vec::new();
                        self.skip_space();
                        if self.peek() == Some(b']') {
                            self.i += 1;
                            return Ok(Request::Call(name, args));
                        }
                        loop {
                            args.push(self.expr()?);
                            self.skip_space();
                            match self.peek() {
                                Some(b';') => self.i += 1,
                                Some(b']') => {
                                    self.i += 1;
                                    return Ok(Request::Call(name, args));
                                }
                                _ => return Err(self.fail("; or ]")),
                            }
                        }
                    }
                    Some(b' ') => {
                        self.skip_space();
                        match self.peek() {
                            None | Some(b';' | b')' | b']') => Ok(Request::Call(name, vec![])),
                            // `f x` applies f to the rest of the expression (q reads right to left).
                            _ => Ok(Request::Call(name, vec![self.expr()?])),
                        }
                    }
                    _ => Ok(Request::Call(name, vec![])),
                }
            }
            _ => Err(self.fail("a name, literal or (")),
        }
    }

    fn number(&mut self) -> Result<Request, String> {
        let start = self.i;
        self.i += 1;
        while self.peek().is_some_and(|c| c.is_ascii_digit() || c == b'.') {
            self.i += 1;
        }
        let text = std::str::from_utf8(&self.s[start..self.i]).expect("ASCII");
        if let Ok(n) = text.parse::<i64>() {
            return Ok(Request::Value(K::Atom(Atom::Long(n))));
        }
        match text.parse::<strata_store::Date>() {
            Ok(d) => Ok(Request::Value(K::Atom(Atom::Date(d.0 - crate::value::EPOCH_OFFSET_DAYS)))),
            Err(_) => Err(self.fail("an integer or a date")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, args: Vec<Request>) -> Request {
        Request::Call(name.into(), args)
    }

    #[test]
    fn kdb_tick_texts_parse() {
        let sub = call(".u.sub", vec![Request::Value(K::symbol("")), Request::Value(K::symbol(""))]);
        assert_eq!(parse(".u.sub[`;`]").unwrap(), sub);
        assert_eq!(
            parse("(.u.sub[`;`];`.u `i`L)").unwrap(),
            Request::List(vec![sub, Request::List(vec![call(".u.i", vec![]), call(".u.L", vec![])])])
        );
        assert_eq!(parse("count trade").unwrap(), call("count", vec![call("trade", vec![])]));
        assert_eq!(parse("tables[]").unwrap(), call("tables", vec![]));
        assert_eq!(
            parse(".u.end 2025.01.02").unwrap(),
            call(".u.end", vec![Request::Value(K::Atom(Atom::Date(9133)))])
        );
        assert_eq!(parse("\\l .").unwrap(), call("\\l", vec![Request::Value(K::string("."))]));
        assert!(parse("{x+y}").unwrap_err().contains("character 1"));
        assert_eq!(parse("sql \"SELECT 1\"").unwrap(), call("sql", vec![Request::Value(K::string("SELECT 1"))]));
    }

    #[test]
    fn sql_text_is_a_call_of_s_e() {
        for text in [
            "SELECT 1",
            "select sym,count(*) from trade group by sym",
            " with x as (select 1) select * from x",
            "select*from t",
        ] {
            assert!(is_sql(text), "{text}");
            let request = Request::from_message(K::string(text)).unwrap();
            assert_eq!(request, call(".s.e", vec![Request::Value(K::string(text))]));
        }
        for text in ["select from trade", "count trade", "tables[]", "selected", ".s.e[\"select 1\"]"] {
            assert!(!is_sql(text), "{text}");
        }
        assert_eq!(
            parse("select from trade").unwrap(),
            call("select", vec![call("from", vec![call("trade", vec![])])])
        );
    }

    #[test]
    fn nesting_is_bounded_and_errors_quote_little() {
        let deep = |n: usize| format!("{}1{}", "(".repeat(n), ")".repeat(n));
        let mut nested = K::Atom(Atom::Long(1));
        for _ in 0..MAX_REQUEST_DEPTH - 1 {
            nested = K::List(vec![nested]);
        }
        assert_eq!(parse(&deep(MAX_REQUEST_DEPTH - 1)).unwrap().eval(&mut |_, _| Ok(K::Identity)), Ok(nested));
        let err = parse(&deep(MAX_REQUEST_DEPTH)).unwrap_err();
        assert!(err.contains("deeper than 64 levels at character 65"), "{err}");
        // A million of them: an error, not a stack overflow, and not a megabyte long.
        for text in ["(".repeat(1 << 20), "f ".repeat(1 << 20), "f[".repeat(1 << 20)] {
            let err = parse(&text).unwrap_err();
            assert!(err.contains("deeper than 64") && err.len() < 300, "{err}");
        }
        let err = parse(&format!("{{{}", "x".repeat(1000))).unwrap_err();
        assert!(err.contains("(1001 bytes)") && err.len() < 300, "{err}");
    }

    #[test]
    fn list_messages_are_calls() {
        let msg = K::List(vec![K::string(".u.upd"), K::symbol("trade"), K::Identity]);
        let Request::Call(name, args) = Request::from_message(msg).unwrap() else { panic!() };
        assert_eq!((name.as_str(), args.len()), (".u.upd", 2));
        assert!(Request::from_message(K::List(vec![K::Atom(Atom::Long(1))])).is_err());
        let mut seen = Vec::new();
        let result = parse("(a;b[1])").unwrap().eval(&mut |n, args| {
            seen.push((n.to_string(), args.len()));
            Ok(K::Identity)
        });
        assert_eq!(result.unwrap(), K::List(vec![K::Identity, K::Identity]));
        assert_eq!(seen, [("a".to_string(), 0), ("b".to_string(), 1)]);
    }
}
