//! [`twin!`]: writes a blocking type, its methods and their documentation
//! from a compact list, each method the twin of the async method of the
//! same name on the async type of the same name.
//!
//! ```text
//! twin! {
//!     /// The type's docs.
//!     handle Lock {                      // or `guard LockGuard`
//!         "let lock = client.lock(name);" // each example's opening lines
//!     } example {
//!         "lock.try_lock()?.unlock()?;"  // the type's own example
//!     }
//!     /// says what it does (after "The blocking twin of [`crate::Lock::try_lock`]:").
//!     async fn try_lock(&self) -> LockGuard { "let guard = lock.try_lock()?;" }
//!     fn name(&self) -> &str { "assert_eq!(lock.name(), name);" }
//!     build fn lease(self, lease: Duration) { "..." }    // -> Self
//!     wait fn lost(&self) -> LostReason { "..." }        // gains a `timeout`
//!     release fn unlock(self) { "..." }                  // guards: Owned::release
//!     take fn forget(self) -> u64 { "..." }              // guards: no release
//!     /// Written out: the whole doc and the body.
//!     own fn names(&self) -> impl Iterator<Item = &str> { self.inner.names() } { "..." }
//! }
//! ```
//!
//! A `handle` wraps the async handle (`inner: crate::Lock`), a `guard`
//! wraps the async guard in an [`Owned`](super::owned::Owned). `async`
//! methods run on the blocking runtime ([`call`](super::call)), and every
//! method's answer goes through [`FromAsync`], which turns an async handle
//! or guard into its blocking twin and leaves anything else as it is. Each
//! example runs with `client` (a blocking client of the test server) and
//! `name` (`"doc:blocking:<Type>:<method>"`, a key of its own) in scope,
//! after the type's opening lines; so does the type's own example.

/// An async value as its blocking twin returns it: an async handle or
/// guard as its blocking twin (impls made by [`twin!`]), anything else as
/// it is.
pub(super) trait FromAsync<A> {
    /// The blocking twin of `a`.
    fn from_async(a: A) -> Self;
}

impl<T> FromAsync<T> for T {
    fn from_async(a: T) -> T {
        a
    }
}

macro_rules! twin {
    // A handle: the async handle inside, cloned with it.
    ($(#[$attr:meta])* handle $N:ident { $($pre:literal)* } example { $($ex:literal)* } $($methods:tt)*) => {
        twin!(@ex [stringify!($N)] [$($pre)*] [$($ex)*] [$(#[$attr])*]
            #[derive(Clone, Debug)]
            pub struct $N {
                inner: $crate::$N,
            }
        );

        impl $crate::blocking::twin::FromAsync<$crate::$N> for $N {
            fn from_async(inner: $crate::$N) -> $N {
                $N { inner }
            }
        }

        impl $N {
            fn get(&self) -> &$crate::$N {
                &self.inner
            }

            twin!(@methods $N [$($pre)*] $($methods)*);
        }
    };

    // A guard: the async guard inside, released by `unlock`/`release` or
    // by Drop (see `Owned`).
    ($(#[$attr:meta])* guard $N:ident { $($pre:literal)* } example { $($ex:literal)* } $($methods:tt)*) => {
        twin!(@ex [stringify!($N)] [$($pre)*] [$($ex)*] [$(#[$attr])*]
            #[clippy::has_significant_drop]
            pub struct $N {
                inner: $crate::blocking::owned::Owned<$crate::$N>,
            }
        );

        impl $crate::blocking::twin::FromAsync<$crate::$N> for $N {
            fn from_async(inner: $crate::$N) -> $N {
                $N { inner: $crate::blocking::owned::Owned::new(inner) }
            }
        }

        impl std::fmt::Debug for $N {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.inner.fmt(f)
            }
        }

        impl $N {
            fn get(&self) -> &$crate::$N {
                self.inner.get()
            }

            twin!(@methods $N [$($pre)*] $($methods)*);
        }
    };

    (@methods $N:ident [$($pre:literal)*]) => {};

    // A call to Redis (or a wait), run on the blocking runtime.
    (@methods $N:ident [$($pre:literal)*]
        $(#[$a:meta])* async fn $m:ident(&self $(, $arg:ident: $t:ty)*) -> $r:ty { $($ex:literal)* }
        $($rest:tt)*
    ) => {
        twin!(@fn $N $m ":" [$($pre)*] [$($ex)*] [$(#[$a])*
            #[doc = "\n# Errors\n\nAs its async twin; [`is_runtime`](crate::Error::is_runtime)"]
            #[doc = "inside a Tokio runtime, where nothing is sent."]
        ]
            pub fn $m(&self $(, $arg: $t)*) -> Result<$r, $crate::Error> {
                $crate::blocking::call(
                    concat!(stringify!($N), "::", stringify!($m)),
                    self.get().$m($($arg),*),
                )
                .map($crate::blocking::twin::FromAsync::from_async)
            }
        );
        twin!(@methods $N [$($pre)*] $($rest)*);
    };

    // What the value knows without asking Redis.
    (@methods $N:ident [$($pre:literal)*]
        $(#[$a:meta])* fn $m:ident(&self $(, $arg:ident: $t:ty)*) -> $r:ty { $($ex:literal)* }
        $($rest:tt)*
    ) => {
        twin!(@fn $N $m ":" [$($pre)*] [$($ex)*] [$(#[$a])*]
            pub fn $m(&self $(, $arg: $t)*) -> $r {
                $crate::blocking::twin::FromAsync::from_async(self.get().$m($($arg),*))
            }
        );
        twin!(@methods $N [$($pre)*] $($rest)*);
    };

    // A builder step: a new handle.
    (@methods $N:ident [$($pre:literal)*]
        $(#[$a:meta])* build fn $m:ident(self $(, $arg:ident: $t:ty)*) { $($ex:literal)* }
        $($rest:tt)*
    ) => {
        twin!(@fn $N $m ":" [$($pre)*] [$($ex)*] [$(#[$a])*]
            #[must_use = concat!("`", stringify!($m), "` returns a new handle; use it to acquire")]
            pub fn $m(self $(, $arg: $t)*) -> $N {
                $N { inner: self.inner.$m($($arg),*) }
            }
        );
        twin!(@methods $N [$($pre)*] $($rest)*);
    };

    // A guard's `lost()`, bounded: the blocking twin waits at most `timeout`.
    (@methods $N:ident [$($pre:literal)*]
        $(#[$a:meta])* wait fn $m:ident(&self) -> $r:ty { $($ex:literal)* }
        $($rest:tt)*
    ) => {
        twin!(@fn $N $m ", waiting at most `timeout`:" [$($pre)*] [$($ex)*] [$(#[$a])*
            #[doc = "\n# Errors\n\n[`is_runtime`](crate::Error::is_runtime) inside a Tokio runtime."]
        ]
            pub fn $m(&self, timeout: std::time::Duration) -> Result<Option<$r>, $crate::Error> {
                $crate::blocking::within(
                    concat!(stringify!($N), "::", stringify!($m)),
                    timeout,
                    self.get().$m(),
                )
            }
        );
        twin!(@methods $N [$($pre)*] $($rest)*);
    };

    // A guard's release in the foreground.
    (@methods $N:ident [$($pre:literal)*]
        $(#[$a:meta])* release fn $m:ident(self) { $($ex:literal)* }
        $($rest:tt)*
    ) => {
        twin!(@fn $N $m ":" [$($pre)*] [$($ex)*] [$(#[$a])*
            #[doc = "\n# Errors\n\nAs its async twin; [`is_runtime`](crate::Error::is_runtime)"]
            #[doc = "inside a Tokio runtime, where the guard is then dropped, which"]
            #[doc = "releases in the background."]
        ]
            pub fn $m(self) -> Result<(), $crate::Error> {
                self.inner.release(concat!(stringify!($N), "::", stringify!($m)))
            }
        );
        twin!(@methods $N [$($pre)*] $($rest)*);
    };

    // A guard given up without a release.
    (@methods $N:ident [$($pre:literal)*]
        $(#[$a:meta])* take fn $m:ident(self) -> $r:ty { $($ex:literal)* }
        $($rest:tt)*
    ) => {
        twin!(@fn $N $m ":" [$($pre)*] [$($ex)*] [$(#[$a])*]
            pub fn $m(self) -> $r {
                self.inner.take().$m()
            }
        );
        twin!(@methods $N [$($pre)*] $($rest)*);
    };

    // Written out, docs and body; only the example is generated.
    (@methods $N:ident [$($pre:literal)*]
        $(#[$a:meta])* own fn $m:ident($($p:tt)*) -> $r:ty $body:block { $($ex:literal)* }
        $($rest:tt)*
    ) => {
        twin!(@ex [stringify!($N), ":", stringify!($m)] [$($pre)*] [$($ex)*] [$(#[$a])*]
            pub fn $m($($p)*) -> $r $body
        );
        twin!(@methods $N [$($pre)*] $($rest)*);
    };

    // A twin method's docs: which method it is the twin of, then the rest.
    (@fn $N:ident $m:ident $to:literal [$($pre:literal)*] [$($ex:literal)*] [$($doc:tt)*] $($item:tt)*) => {
        twin!(@ex [stringify!($N), ":", stringify!($m)] [$($pre)*] [$($ex)*] [
            #[doc = concat!("The blocking twin of [`crate::", stringify!($N), "::", stringify!($m), "`]", $to)]
            $($doc)*
        ] $($item)*);
    };

    // An item with its docs, then its running example.
    (@ex [$($key:expr),*] [$($pre:literal)*] [$($ex:literal)*] [$($doc:tt)*] $($item:tt)*) => {
        $($doc)*
        #[doc = "\n# Examples\n\n```"]
        #[doc = "# #![allow(unused)]"]
        #[doc = "# use std::time::{Duration, Instant};"]
        #[doc = "# fn main() -> Result<(), redlease::Error> {"]
        #[doc = "# let url = redlease_testkit::RedisServer::shared().url();"]
        #[doc = "# let client = redlease::blocking::Client::connect(&url)?;"]
        #[doc = concat!("# let name = \"doc:blocking:", $($key,)* "\";")]
        $(#[doc = $pre])*
        $(#[doc = $ex])*
        #[doc = "# Ok(())\n# }\n```"]
        $($item)*
    };
}
