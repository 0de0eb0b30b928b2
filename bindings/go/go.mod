module github.com/pora-miner/pora/bindings/go

go 1.19
