//go:build !pora_cleanup_fix

// Without the tag the tree's Cleanup is es-node v0.2.10's (TestCleanupOfAnOlderBlock).
package downloader

const cleanupFixed = false
