//! Finding the attributes in one file's source: free functions, methods in
//! `impl` and trait `impl` blocks, trait default methods, inline modules and
//! functions nested in function bodies. Items produced by macros
//! (`cfg_if!`, ..) are not expanded, so their locks are not seen.

use syn::visit::{self, Visit};
use syn::{
    Attribute, ImplItemFn, ItemFn, ItemImpl, ItemMod, ItemTrait, Signature, TraitItemFn, Type,
};

use crate::attr;
use crate::model::{Declared, Problem, ProblemKind};

/// The locks and problems in one file; `file` is the name to report.
pub(crate) fn scan_source(file: &str, source: &str) -> (Vec<Declared>, Vec<Problem>) {
    let mut scanner = Scanner {
        file,
        modules: Vec::new(),
        owner: None,
        locks: Vec::new(),
        problems: Vec::new(),
    };
    match syn::parse_file(source) {
        Ok(ast) => scanner.visit_file(&ast),
        Err(err) => scanner.problems.push(Problem {
            file: file.to_owned(),
            line: Some(err.span().start().line),
            kind: ProblemKind::UnparsableFile,
            message: format!(
                "file does not parse, its locks are not listed: {}",
                describe_parse_error(&err)
            ),
        }),
    }
    // proc-macro2 keeps every parsed file's text for span lookups until told
    // otherwise; all lines are read by now, so free it to keep a scan of a
    // large tree from holding the whole tree in memory.
    proc_macro2::extra::invalidate_current_thread_spans();
    (scanner.locks, scanner.problems)
}

struct Scanner<'a> {
    file: &'a str,
    /// Inline modules around the current item, outermost first.
    modules: Vec<String>,
    /// The type (or trait) whose `impl` (or definition) we are in.
    owner: Option<String>,
    locks: Vec<Declared>,
    problems: Vec<Problem>,
}

impl Scanner<'_> {
    fn check(&mut self, attrs: &[Attribute], sig: &Signature) {
        for attribute in attrs.iter().filter(|a| attr::is_lock_attribute(a)) {
            let function = self.function_name(sig);
            match attr::parse(attribute, sig) {
                Ok(args) => self.locks.push(Declared {
                    file: self.file.to_owned(),
                    line: attribute.pound_token.span.start().line,
                    function,
                    prefix: args.template.prefix(),
                    key: args.key,
                    mode: args.mode,
                    wait: args.wait,
                    lease: args.lease,
                    at_least: args.at_least,
                    client: args.client,
                }),
                Err(err) => self.problems.push(Problem {
                    file: self.file.to_owned(),
                    line: Some(err.span().start().line),
                    kind: ProblemKind::MalformedAttribute,
                    // Every mistake, as the compiler would list them.
                    message: format!(
                        "malformed #[distributed_lock] on `{function}`, not listed: {}",
                        err.into_iter()
                            .map(|e| e.to_string())
                            .collect::<Vec<_>>()
                            .join("; ")
                    ),
                }),
            }
        }
    }

    fn function_name(&self, sig: &Signature) -> String {
        let mut parts = self.modules.clone();
        parts.extend(self.owner.clone());
        parts.push(sig.ident.to_string());
        parts.join("::")
    }

    /// Runs `f` with `owner` set, restoring the outer one afterwards.
    fn with_owner(&mut self, owner: Option<String>, f: impl FnOnce(&mut Self)) {
        let outer = std::mem::replace(&mut self.owner, owner);
        f(self);
        self.owner = outer;
    }
}

impl<'ast> Visit<'ast> for Scanner<'_> {
    fn visit_item_fn(&mut self, item: &'ast ItemFn) {
        self.check(&item.attrs, &item.sig);
        // A function nested in a method's body is not a method.
        self.with_owner(None, |s| visit::visit_item_fn(s, item));
    }

    fn visit_impl_item_fn(&mut self, item: &'ast ImplItemFn) {
        self.check(&item.attrs, &item.sig);
        self.with_owner(None, |s| visit::visit_impl_item_fn(s, item));
    }

    fn visit_trait_item_fn(&mut self, item: &'ast TraitItemFn) {
        self.check(&item.attrs, &item.sig);
        self.with_owner(None, |s| visit::visit_trait_item_fn(s, item));
    }

    fn visit_item_impl(&mut self, item: &'ast ItemImpl) {
        let owner = type_name(&item.self_ty);
        self.with_owner(Some(owner), |s| visit::visit_item_impl(s, item));
    }

    fn visit_item_trait(&mut self, item: &'ast ItemTrait) {
        let owner = item.ident.to_string();
        self.with_owner(Some(owner), |s| visit::visit_item_trait(s, item));
    }

    fn visit_item_mod(&mut self, item: &'ast ItemMod) {
        // `mod x;` has no content here; its file is scanned on its own.
        self.modules.push(item.ident.to_string());
        visit::visit_item_mod(self, item);
        self.modules.pop();
    }
}

/// syn's message, except for a tokenizer failure, whose wording ("cannot
/// parse string into token stream") does not say what to look for.
fn describe_parse_error(err: &syn::Error) -> String {
    let message = err.to_string();
    if message == "cannot parse string into token stream" {
        "unbalanced delimiters, or an unterminated string or comment".to_owned()
    } else {
        message
    }
}

/// `Repo` for `impl<T> Repo<T>`, `impl Job for Repo`, `impl Job for &Repo`:
/// the last path segment without generics, which is how people name the
/// method (`Repo::save`). Other types keep their full text.
fn type_name(ty: &Type) -> String {
    match ty {
        Type::Path(path) if path.qself.is_none() => path
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default(),
        Type::Reference(reference) => type_name(&reference.elem),
        Type::Paren(paren) => type_name(&paren.elem),
        other => quote::ToTokens::to_token_stream(other)
            .to_string()
            .replace(' ', ""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn scan(source: &str) -> (Vec<Declared>, Vec<Problem>) {
        scan_source("src/lib.rs", source)
    }

    #[test]
    fn reads_a_free_function() {
        let (locks, problems) = scan(
            "\n#[redlease::distributed_lock(key = \"sales:receipt:lock:{bill_id}\", wait = \"15s\", lease = \"120s\")]\n\
             async fn issue_receipt(bill_id: u64) -> Result<(), AppError> { Ok(()) }\n",
        );
        assert!(problems.is_empty(), "{problems:?}");
        let [lock] = locks.as_slice() else {
            panic!("{locks:?}")
        };
        assert_eq!(lock.file, "src/lib.rs");
        assert_eq!(lock.line, 2);
        assert_eq!(lock.function, "issue_receipt");
        assert_eq!(lock.key, "sales:receipt:lock:{bill_id}");
        assert_eq!(lock.prefix.as_deref(), Some("sales:receipt:lock"));
        let wait = lock.wait.as_ref().unwrap();
        assert_eq!(
            (wait.text.as_str(), wait.duration),
            ("15s", Duration::from_secs(15))
        );
        let lease = lock.lease.as_ref().unwrap();
        assert_eq!(
            (lease.text.as_str(), lease.duration),
            ("120s", Duration::from_secs(120))
        );
        assert_eq!(lock.client, None);
        assert_eq!(lock.mode, crate::Mode::Plain);
    }

    #[test]
    fn names_methods_modules_and_nested_functions() {
        let (locks, problems) = scan(
            r#"
mod jobs {
    pub mod monthly {
        #[distributed_lock(key = "payroll:batch:{month}", lease = "10m")]
        async fn run(month: u32) {}
    }
    impl<T> Repo<T> {
        #[::redlease::distributed_lock(key = "repo:save:{self.id}", client = self.locks)]
        async fn save(&self) {
            #[distributed_lock(key = "repo:inner:{x}")]
            async fn inner(x: u8) {}
        }
    }
}
impl Job for &Nightly {
    #[redlease_macros::distributed_lock(key = "nightly:run:{day}")]
    async fn run(&self, day: u32) {}
}
trait Sweep {
    #[distributed_lock(key = "sweep:{{all}}")]
    async fn sweep(&self) {}
}
#[other::distributed_lock(key = "not:ours")]
#[::distributed_lock(key = "not:ours")]
async fn ignored() {}
"#,
        );
        assert!(problems.is_empty(), "{problems:?}");
        let names: Vec<_> = locks
            .iter()
            .map(|l| (l.function.as_str(), l.line))
            .collect();
        assert_eq!(
            names,
            [
                ("jobs::monthly::run", 4),
                ("jobs::Repo::save", 8),
                ("jobs::inner", 10),
                ("Nightly::run", 16),
                ("Sweep::sweep", 20),
            ]
        );
        assert_eq!(locks[1].client.as_deref(), Some("self.locks"));
        assert_eq!(locks[0].wait, None);
        assert_eq!(locks[3].lease, None);
    }

    #[test]
    fn reports_a_file_that_does_not_parse() {
        let (locks, problems) = scan("fn ok() {}\n\nfn broken( {\n");
        assert!(locks.is_empty());
        let [problem] = problems.as_slice() else {
            panic!("{problems:?}")
        };
        assert_eq!(problem.kind, ProblemKind::UnparsableFile);
        assert!(
            problem.message.starts_with("file does not parse"),
            "{}",
            problem.message
        );
        assert!(problem.line.is_some());
    }

    #[test]
    fn reports_malformed_attributes_with_their_line() {
        let cases = [
            ("#[distributed_lock]", "missing option `key`"),
            (
                "#[distributed_lock = \"a:{id}\"]",
                "expected `#[distributed_lock(key",
            ),
            (
                "#[distributed_lock(lease = \"1s\")]",
                "missing option `key`",
            ),
            (
                "#[distributed_lock(key = \"a:{id}\", wait = \"15 seconds\")]",
                "invalid duration \"15 seconds\"",
            ),
            (
                "#[distributed_lock(key = \"a:{id}\", lease = \"0s\")]",
                "a lease must be longer than zero",
            ),
            (
                "#[distributed_lock(key = \"a:{id}\", lease = 15)]",
                "`lease` must be a string literal",
            ),
            (
                "#[distributed_lock(key = \"a:{id}\", ttl = \"1s\")]",
                "unknown option `ttl`",
            ),
            (
                "#[distributed_lock(key = \"a:{id}\", key = \"b\")]",
                "duplicate option `key`",
            ),
            (
                "#[distributed_lock(key = \"a:{nope}\")]",
                "`{nope}` in the key is not an argument of `f`; its only argument is `id`",
            ),
            ("#[distributed_lock(key = \"a:{id\")]", "unclosed `{`"),
            (
                "#[distributed_lock(key = \"a:{id:y}\")]",
                "invalid format spec: unknown format trait `y`",
            ),
            (
                "#[distributed_lock(key = \"a:{id}\", lease = \"876000h1ms\")]",
                "at most 100 years",
            ),
            (
                "#[distributed_lock(key = \"a:{id}\", wait = \"30s1m\")]",
                "units must go from largest to smallest",
            ),
            ("#[distributed_lock(key \"a\")]", "expected `=`"),
        ];
        for (attribute, expected) in cases {
            let (locks, problems) = scan(&format!("\n\n{attribute}\nasync fn f(id: u64) {{}}\n"));
            assert!(locks.is_empty(), "{attribute}");
            let [problem] = problems.as_slice() else {
                panic!("{attribute}: {problems:?}")
            };
            assert_eq!(problem.kind, ProblemKind::MalformedAttribute);
            assert_eq!(problem.line, Some(3), "{attribute}");
            assert!(
                problem
                    .message
                    .starts_with("malformed #[distributed_lock] on `f`, not listed: "),
                "{}",
                problem.message
            );
            assert!(
                problem.message.contains(expected),
                "{attribute}: {}",
                problem.message
            );
        }
    }

    #[test]
    fn reports_every_mistake_of_one_attribute() {
        let (_, problems) = scan(
            "#[distributed_lock(key = \"a:{nope}\", wait = \"soon\", retries = 3)]\nasync fn f() {}\n",
        );
        let [problem] = problems.as_slice() else {
            panic!("{problems:?}")
        };
        assert_eq!(
            problem.message,
            "malformed #[distributed_lock] on `f`, not listed: invalid duration \"soon\": \
             expected integers each followed by a unit (`ms`, `s`, `m` or `h`), like \"15s\" or \
             \"1m30s\"; unknown option `retries`; expected `key`, `mode`, `wait`, `lease`, `at_least` or `client`; \
             `{nope}` in the key is not an argument of `f`; it takes no arguments"
        );
    }

    #[test]
    fn pattern_arguments_bind_names_as_in_the_attribute() {
        let (locks, problems) =
            scan("#[distributed_lock(key = \"a:{x}:{y}\")]\nasync fn f((x, y): (u8, u8)) {}\n");
        assert_eq!((locks.len(), problems.len()), (1, 0));
        let (locks, problems) =
            scan("#[distributed_lock(key = \"a:{z}\")]\nasync fn f((x, y): (u8, u8)) {}\n");
        assert_eq!((locks.len(), problems.len()), (0, 1));
        assert!(
            problems[0]
                .message
                .contains("its arguments are `x` and `y`"),
            "{}",
            problems[0].message
        );
    }
}
