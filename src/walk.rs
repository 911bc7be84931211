//! The one configured walk of a directory tree (the `ignore` crate,
//! ripgrep's and ruff's walker), for the loader's discovery and for the
//! packages of a workspace.

use std::path::Path;

/// A walk of `root` that passes over what `.gitignore` and `.ignore` list,
/// hidden files and `node_modules/`. `.gitignore` files apply outside a
/// Git checkout too (a tarball of the repository, a copy), and the user's
/// global excludes do not, so that a run gives the same files on every
/// machine.
pub(crate) fn walker(root: &Path) -> ignore::WalkBuilder {
    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .hidden(true)
        .ignore(true)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .require_git(false)
        .parents(true)
        .follow_links(false)
        // Installed packages hold no machine of the project, ignored or not.
        .filter_entry(|entry| entry.file_name() != "node_modules");
    builder
}
