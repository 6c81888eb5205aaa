//! Builds liblz4 for the `lz4` feature (see csrc/lz4_kuradb.c for why kuradb
//! builds its own rather than lz4-sys's). Nothing else is built here.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var_os("CARGO_FEATURE_LZ4").is_some() {
        build_lz4();
    }
}

#[cfg(feature = "lz4")]
fn build_lz4() {
    println!("cargo:rerun-if-changed=csrc/lz4_kuradb.c");
    println!("cargo:rerun-if-changed=csrc/lz4/lz4.c");
    println!("cargo:rerun-if-changed=csrc/lz4/lz4.h");
    cc::Build::new()
        .file("csrc/lz4_kuradb.c")
        // 64 KiB hash tables: the reason is in csrc/lz4_kuradb.c. Set here,
        // not through CFLAGS, so that it holds for every crate built on kuradb.
        .define("LZ4_MEMORY_USAGE", "16")
        // liblz4 is some 20 times slower unoptimized, and a dev build of the
        // tests would spend minutes in it.
        .opt_level(3)
        // Most of lz4.c's functions go unused once they are static.
        .flag_if_supported("-Wno-unused-function")
        .compile("kuradb_lz4");
}

#[cfg(not(feature = "lz4"))]
fn build_lz4() {}
