// The data files' headers, read before any engine opens: which shard each file holds, and the
// miner and shard size they were written for, compared with the configuration so that a
// mismatch is refused when the adapter is made rather than found as a wrong hash later.
package esnode

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
)

// The data file's header (docs/spec/algorithm.md): big-endian u64s from byte 0, the miner at 64.
const (
	headerMagic   = 0xcf20bd770c22b2e1
	headerReadLen = 84
)

// fileHeader is what the adapter checks of one data file.
type fileHeader struct {
	chunkIdxStart, chunkIdxLen, maxKvSize, chunkSize uint64
	miner                                            [20]byte
}

func readHeader(path string) (fileHeader, error) {
	var h fileHeader
	f, err := os.Open(path)
	if err != nil {
		return h, fmt.Errorf("esnode: Config.Files: %w", err)
	}
	defer f.Close()
	var b [headerReadLen]byte
	if _, err := io.ReadFull(f, b[:]); err != nil {
		return h, fmt.Errorf("esnode: Config.Files: %s: reading its header: %w", path, err)
	}
	u := func(i int) uint64 { return binary.BigEndian.Uint64(b[8*i:]) }
	if u(0) != headerMagic {
		return h, fmt.Errorf("esnode: Config.Files: %s: not an es-node data file (magic %#x)", path, u(0))
	}
	h.chunkIdxStart, h.chunkIdxLen, h.maxKvSize, h.chunkSize = u(2), u(3), u(5), u(6)
	copy(h.miner[:], b[64:84])
	if h.chunkSize == 0 || h.maxKvSize == 0 || h.maxKvSize%h.chunkSize != 0 || h.chunkIdxLen == 0 {
		return h, fmt.Errorf("esnode: Config.Files: %s: header maxKvSize %d, chunkSize %d, chunkIdxLen %d", path, h.maxKvSize, h.chunkSize, h.chunkIdxLen)
	}
	return h, nil
}

// shardLayout groups files by the shard their chunks lie in, refusing a file written for
// another miner or whose chunks do not fit the shard size 2^kvEntriesBits KVs.
func shardLayout(files []string, kvEntriesBits uint64, miner [20]byte) (map[uint64][]string, error) {
	layout := map[uint64][]string{}
	chunks, chunksPerShard := map[uint64]uint64{}, map[uint64]uint64{}
	for _, path := range files {
		h, err := readHeader(path)
		if err != nil {
			return nil, err
		}
		if h.miner != miner {
			return nil, fmt.Errorf("esnode: Config.Miner 0x%x: %s is encoded for 0x%x", miner, path, h.miner)
		}
		perShard := (h.maxKvSize / h.chunkSize) << kvEntriesBits
		first, last := h.chunkIdxStart/perShard, (h.chunkIdxStart+h.chunkIdxLen-1)/perShard
		if first != last {
			return nil, fmt.Errorf("esnode: Config.KvEntriesBits %d: %s holds chunks %d..%d, which span shards %d..%d of %d chunks each",
				kvEntriesBits, path, h.chunkIdxStart, h.chunkIdxStart+h.chunkIdxLen, first, last, perShard)
		}
		layout[first] = append(layout[first], path)
		chunks[first] += h.chunkIdxLen
		chunksPerShard[first] = perShard
	}
	for shard, n := range chunks {
		if n != chunksPerShard[shard] {
			return nil, fmt.Errorf("esnode: Config.KvEntriesBits %d: shard %d has %d chunks in its files, %d expected", kvEntriesBits, shard, n, chunksPerShard[shard])
		}
	}
	return layout, nil
}
