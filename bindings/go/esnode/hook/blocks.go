// The hook's text: every block pora-esnode writes into es-node v0.2.10, with the place it goes.
// This is the one source of the hook: the tool applies these blocks, and docs/es-node.md shows
// them (bindings/go/esnode's TestHookSizeAndDoc and TestEncoderBlockSizeAndDoc fail when the page
// shows anything else).

package hook

// Set is a group of blocks applied together.
type Set string

const (
	// Mining is the mining hook: the --miner.pora flag, the adapter made in initMiner, the top of
	// mineTask, close, and the disk cache's VisitKVs.
	Mining Set = "mining"
	// Encoder is the encoder block: es-node's masks through pora's encoder.
	Encoder Set = "encoder"
	// CleanupFix is the optional fix to BlobDiskCache.Cleanup, apart from the hook: it changes
	// what es-node's cache answers, so it is offered on its own.
	CleanupFix Set = "cleanup-fix"
)

// Block is one contiguous change to one es-node file.
type Block struct {
	Set  Set
	File string // es-node's path, slash-separated
	// Place says where the block goes, as docs/es-node.md labels it.
	Place string
	// Scope is where Anchor is looked for: "import" (the block goes at the end of the file's
	// import list; gofmt sorts it into place), "func NAME" or "func TYPE.NAME" (a function or
	// method), "type NAME" or "file".
	Scope string
	// Anchor is a line of the scope, compared with runs of white space taken as one space; ""
	// names the scope's last line.
	Anchor string
	// Offset places the block from the anchor line: 1 after it, 0 before it, -1 before the line
	// above it.
	Offset int
	// Replace: the block's lines replace the anchor line (Anchor is then the whole line).
	Replace bool
	// Lines are the block's lines as written (tabs), before gofmt aligns them with their
	// neighbours.
	Lines []string
}

// Module is pora's Go module, the one es-node's go.mod requires.
const Module = "github.com/pora-miner/pora/bindings/go"

// Blocks is every block, in the order docs/es-node.md shows them.
var Blocks = []Block{
	imports(Mining, "ethstorage/node/node.go", "github.com/ethereum/go-ethereum/common", esnodePackage),
	{Set: Mining, File: "ethstorage/node/node.go",
		Place: "initMiner, before `n.miner = miner.New(...)`",
		Scope: "func initMiner", Anchor: "n.miner = miner.New(", Offset: 0, Lines: []string{
			"\tif cfg.Mining.Pora { // the worker gets pora's adapter with its Config, before it starts",
			"\t\tvar err error",
			"\t\tcfg.Mining.PoraMiner, err = esnode.New[common.Hash](esnode.Config{",
			"\t\t\tFiles: cfg.Storage.Filenames, Miner: cfg.Storage.Miner, Log: n.lg,",
			"\t\t\tKvEntriesBits: n.storageManager.KvEntriesBits(), SlotSec: cfg.Mining.Slot,",
			"\t\t\tRandomChecks: cfg.Mining.RandomChecks, NonceLimit: cfg.Mining.NonceLimit,",
			"\t\t\tThreadsPerShard: cfg.Mining.ThreadsPerShard}, n.blobCache)",
			"\t\tif err != nil {",
			"\t\t\treturn fmt.Errorf(\"--miner.pora: %w\", err)",
			"\t\t}",
			"\t}",
		}},
	imports(Mining, "ethstorage/miner/config.go", esnodePackage),
	{Set: Mining, File: "ethstorage/miner/config.go", Place: "the end of `type Config`",
		Scope: "type Config", Offset: 0, Lines: []string{
			"",
			"\t// --miner.pora: the worker mines through PoraMiner, made by initMiner (nil: flag off)",
			"\tPora      bool",
			"\tPoraMiner *esnode.Miner[common.Hash]",
		}},
	{Set: Mining, File: "ethstorage/miner/cli.go",
		Place: "after `EmailEnabledFlagName = \"miner.email-enabled\"`",
		Scope: "file", Anchor: "EmailEnabledFlagName = \"miner.email-enabled\"", Offset: 1,
		Lines: []string{
			"",
			"\tPoraFlagName = \"miner.pora\"",
		}},
	{Set: Mining, File: "ethstorage/miner/cli.go", Place: "CLIFlags, the end of the list",
		Scope: "func CLIFlags", Anchor: "return flag", Offset: -1, Lines: []string{
			"\t\tcli.BoolFlag{",
			"\t\t\tName:   PoraFlagName,",
			"\t\t\tUsage:  \"Mine through pora (reads the shard files at the disk's limit)\",",
			"\t\t\tEnvVar: minerEnv(\"PORA\"),",
			"\t\t},",
		}},
	{Set: Mining, File: "ethstorage/miner/cli.go", Place: "the end of `type CLIConfig`",
		Scope: "type CLIConfig", Offset: 0, Lines: []string{
			"\tPora bool",
		}},
	{Set: Mining, File: "ethstorage/miner/cli.go", Place: "ReadCLIConfig, the end of the literal",
		Scope: "func ReadCLIConfig", Anchor: "return cfg", Offset: -1, Lines: []string{
			"\t\tPora: ctx.GlobalBool(PoraFlagName),",
		}},
	{Set: Mining, File: "ethstorage/miner/cli.go", Place: "ToMinerConfig, before `return cfg, nil`",
		Scope: "func ToMinerConfig", Anchor: "return cfg, nil", Offset: 0, Lines: []string{
			"\tcfg.Pora = c.Pora",
		}},
	imports(Mining, "ethstorage/miner/worker.go", esnodePackage),
	{Set: Mining, File: "ethstorage/miner/worker.go", Place: "close, after `w.wg.Wait()`",
		Scope: "func close", Anchor: "w.wg.Wait()", Offset: 1, Lines: []string{
			"\tif w.config.PoraMiner != nil { // --miner.pora: the task loops are done with it",
			"\t\tif err := w.config.PoraMiner.Close(); err != nil {",
			"\t\t\tw.lg.Error(\"Failed to close pora\", \"err\", err)",
			"\t\t}",
			"\t}",
		}},
	{Set: Mining, File: "ethstorage/miner/worker.go",
		Place: "mineTask, after `w.lg.Debug(\"Mining task started\", ...)`",
		Scope: "func mineTask", Anchor: "w.lg.Debug(\"Mining task started\"", Offset: 1,
		Lines: []string{
			"\tif pora := w.config.PoraMiner; pora != nil { // --miner.pora: pora tries the nonces",
			"\t\tres, err := pora.MineTask(esnode.Task{Miner: t.miner, ShardIdx: t.shardIdx,",
			"\t\t\tRequiredDiff: t.requiredDiff, BlockNumber: t.blockNumber,",
			"\t\t\tMixHash: t.mixHash, NonceStart: t.nonceStart, NonceEnd: t.nonceEnd,",
			"\t\t\tThread: t.thread, Running: w.isRunning,",
			"\t\t\tState: (*esnode.MiningState)(w.miningStates[t.shardIdx])})",
			"\t\tif err != nil || !res.Found {",
			"\t\t\treturn false, err",
			"\t\t}",
			"\t\t// found in the slot: re-checked and submitted below, on a new clock however late",
			"\t\tnonce, t.nonceEnd, startTime = res.NonceStart, res.NonceEnd, time.Now()",
			"\t}",
		}},
	{Set: Mining, File: "ethstorage/downloader/blob_disk_cache.go",
		Place: "after `func (c *BlobDiskCache) Close()`",
		Scope: "func BlobDiskCache.Close", Offset: 1, Lines: []string{
			"",
			"// VisitKVs lists, for each KV, the copy GetSampleData reads: pora mines the same bytes.",
			"func (c *BlobDiskCache) VisitKVs(visit func(kvIdx uint64, hash common.Hash, block uint64)) {",
			"\tc.mu.RLock()",
			"\tdefer c.mu.RUnlock()",
			"\tfor number, block := range c.blockLookup {",
			"\t\tfor _, bl := range block.blobs {",
			"\t\t\tif k := bl.kvIndex; k != nil && c.kvIndexLookup[k.Uint64()] == bl.dataId {",
			"\t\t\t\tvisit(k.Uint64(), bl.hash, number)",
			"\t\t\t}",
			"\t\t}",
			"\t}",
			"}",
		}},

	imports(Encoder, "ethstorage/encoder/encoder.go", esnodePackage),
	{Set: Encoder, File: "ethstorage/encoder/encoder.go", Place: "the top of Encode",
		Scope: "func Encode", Anchor: "func Encode(", Offset: 1, Lines: []string{
			"\tif mask, ok := esnode.EncodeMask(hash, size); ok { // only with --miner.pora",
			"\t\treturn mask, nil",
			"\t}",
		}},

	{Set: CleanupFix, File: "ethstorage/downloader/blob_disk_cache.go",
		Place: "Cleanup, the `if blob.kvIndex != nil {` guard, changed",
		Scope: "func BlobDiskCache.Cleanup", Anchor: "if blob.kvIndex != nil {", Replace: true,
		Lines: []string{
			"\t\t\t\tif blob.kvIndex != nil &&",
			"\t\t\t\t\tc.kvIndexLookup[blob.kvIndex.Uint64()] == blob.dataId {",
		}},
}

// esnodePackage is the adapter's import path, the one es-node's files import.
const esnodePackage = Module + "/esnode"

// imports is the block that adds paths to file's import list (at its end; gofmt sorts them into
// place).
func imports(set Set, file string, paths ...string) Block {
	lines := make([]string, len(paths))
	for i, p := range paths {
		lines[i] = "\t\"" + p + "\""
	}
	return Block{Set: set, File: file, Place: "imports", Scope: "import", Lines: lines}
}

// OfSet is the blocks of one set, in order.
func OfSet(set Set) []Block {
	var out []Block
	for _, b := range Blocks {
		if b.Set == set {
			out = append(out, b)
		}
	}
	return out
}
