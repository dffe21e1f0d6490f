# Sourced by the README checks' self-tests (check_readme_quotes.sh,
# check_readme_text.sh): $self is the check, $book a small book that must
# pass it, and a fault planted in $copy, a fresh copy of it, must fail it.

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
book="$tmp/book"

# The small book passes, or the self-test fails.
book_passes() {
    if ! out="$(bash "$self" "$book")"; then
        echo "self-test FAILED: the small book does not pass:"
        echo "$out"
        exit 1
    fi
}

# A fresh copy of the small book at $copy, for one fault.
fresh_copy() {
    copy="$tmp/copy"
    rm -rf "$copy"
    cp -r "$book" "$copy"
}

# caught WHAT NAMED: the check fails on $copy and names NAMED.
caught() {
    if out="$(bash "$self" "$copy")"; then
        echo "self-test FAILED: $1 was not caught"
        exit 1
    fi
    if ! grep -qF "$2" <<<"$out"; then
        echo "self-test FAILED: $1 was caught but $2 was not named:"
        echo "$out"
        exit 1
    fi
}
