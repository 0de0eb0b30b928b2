//go:build pora_cleanup_fix

// With the tag the tree has pora-esnode's Cleanup fix applied (TestCleanupOfAnOlderBlock).
package downloader

const cleanupFixed = true
