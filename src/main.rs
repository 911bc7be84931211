//! The `idemchart` command.

mod cli;

// See the dependency's comment in Cargo.toml for why the binary has its own.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    cli::main()
}
