//go:build pora_sim

package porago

// buildTags are the tags this test binary was built with, for the programs the tests build
// (porago): the same library, here the one with the simulated disk (link.go).
const buildTags = "pora_sim"
