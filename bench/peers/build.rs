//! Finds the reference's C library (`libtkrzw-dev`, through pkg-config):
//! where it is, the reference's columns run through it like any other
//! store, every row; where it is not, through its `tkrzw_dbm_perf`
//! program, the seeds' rows only (docs/benchmarks.md).

fn main() {
    println!("cargo::rustc-check-cfg=cfg(tkrzw_lib)");
    // Only the shared library is linked: the libraries the package's
    // pkg-config file lists beside it are for a static link, and their
    // development files need not be installed.
    match pkg_config::Config::new().atleast_version("1.0").cargo_metadata(false).probe("tkrzw") {
        Ok(library) => {
            for path in &library.link_paths {
                println!("cargo::rustc-link-search=native={}", path.display());
            }
            println!("cargo::rustc-cfg=tkrzw_lib");
        }
        Err(e) => println!(
            "cargo::warning=no libtkrzw-dev ({}): the reference's columns run through tkrzw_dbm_perf, the seeds' rows only",
            e.to_string().lines().next().unwrap_or("not found")
        ),
    }
}
