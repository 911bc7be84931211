//! Cutting what a large run keeps to its length. A vector grown a push at a
//! time has room for up to twice its items, and a string made by `format!`
//! or `push_str` the same; a large machine's model and findings, held
//! through a whole lint, are hundreds of thousands of them.
//!
//! Each is copied into an allocation of its length rather than shrunk in
//! place: glibc splits a block that shrinks and keeps the rest as a free
//! fragment of its own (hundreds of thousands of them made its later
//! allocations slower), and mimalloc keeps a block that shrinks to half its
//! size or more as it was.

/// `items` in a buffer of their length.
pub(crate) fn vec<T>(items: &mut Vec<T>) {
    if items.len() < items.capacity() {
        let mut fitted = Vec::with_capacity(items.len());
        fitted.append(items);
        *items = fitted;
    }
}

/// `text` in a buffer of its length.
pub(crate) fn string(text: &mut String) {
    if text.len() < text.capacity() {
        *text = text.as_str().to_owned();
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn keeps_the_items_and_drops_the_room() {
        let mut items: Vec<u32> = Vec::with_capacity(64);
        items.extend([3, 1, 2]);
        super::vec(&mut items);
        assert_eq!((items.as_slice(), items.capacity()), (&[3, 1, 2][..], 3));
        let mut text = String::with_capacity(64);
        text.push_str("E0*");
        super::string(&mut text);
        assert_eq!((text.as_str(), text.capacity()), ("E0*", 3));
        let mut empty: Vec<u32> = Vec::with_capacity(8);
        super::vec(&mut empty);
        assert_eq!(empty.capacity(), 0);
    }
}
