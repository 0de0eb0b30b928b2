// The bug pora-esnode's optional Cleanup fix (apply -cleanup-fix) fixes, in this tree's disk cache
// as es-node v0.2.10 has it: a KV cached by two blocks, the older finalized first. Cleanup drops
// the KV's lookup although it points at the newer block's copy, so GetSampleData answers nil (the
// miner then samples the file's older bytes) while Blobs and GetKeyValueByIndex still hold the
// newer copy. Without the fix (es-node as it is) the test asserts the bug; with it
// (-tags pora_cleanup_fix, after apply -cleanup-fix), that the newer copy is answered.
package downloader

import (
	"bytes"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/log"
)

func TestCleanupOfAnOlderBlock(t *testing.T) {
	const kv = 7
	older, newer := bytes.Repeat([]byte{1}, 4096), bytes.Repeat([]byte{2}, 4096)
	c := NewBlobDiskCache(log.Discard{})
	for i, data := range [][]byte{older, newer} {
		b := NewBlock(uint64(10 + i))
		AddBlob(b, kv, common.Hash{byte(i + 1)}, data)
		if err := c.SetBlockBlobs(b); err != nil {
			t.Fatal(err)
		}
	}
	if got := c.GetSampleData(kv, 0); !bytes.Equal(got, newer[:32]) {
		t.Fatalf("before Cleanup: GetSampleData %x, want the newer copy", got)
	}
	c.Cleanup(10)
	if got := c.GetKeyValueByIndex(kv, common.Hash{2}); !bytes.Equal(got, newer) {
		t.Fatal("after Cleanup(10) the newer copy is gone from GetKeyValueByIndex")
	}
	got := c.GetSampleData(kv, 0)
	if cleanupFixed {
		if !bytes.Equal(got, newer[:32]) {
			t.Fatalf("with the fix: GetSampleData %x, want the newer copy", got)
		}
		return
	}
	if got != nil {
		t.Fatalf("es-node v0.2.10's Cleanup: GetSampleData %x; this test asserts its bug (nil)", got)
	}
	t.Log("es-node v0.2.10: after Cleanup(10) GetSampleData answers nil; the newer copy is still cached")
}
