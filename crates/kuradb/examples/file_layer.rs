//! Writes and reads the same records through every file implementation and a
//! few options, printing what each file reports about itself.
//!
//! Run with `cargo run -p kuradb --example file_layer`.

use kuradb::dbm::Durability;
use kuradb::file::{FileSpec, OpenOptions};

fn main() -> kuradb::Result<()> {
    let dir = std::env::temp_dir().join(format!("kuradb-example-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    for text in [
        "mmap-para",
        "mmap-atom",
        "pos-para",
        "pos-atom,block_size=512",
        "pos-para,block_size=4096,access=pagecache,head_buffer_size=8192",
    ] {
        let spec = FileSpec::parse(text)?;
        let path = dir.join("casket.dat");
        let mut file = spec.open(&path, &OpenOptions::writer().truncating())?;
        for i in 0..1000u32 {
            file.append(format!("record {i:06}\n").as_bytes())?;
        }
        let mut buf = [0u8; 14];
        file.read(500 * 14, &mut buf)?;
        file.synchronize(Durability::Soft)?;
        println!("{text:70} size={} record 500={:?}", file.size(), String::from_utf8_lossy(&buf).trim_end());
        for (name, value) in file.inspect() {
            if name.starts_with("page_cache") {
                println!("    {name}={value}");
            }
        }
        file.close()?;
    }
    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}
