//! Charts (SVG) for `pora bench --plot` and `pora tune --plot`.
