module github.com/ethstorage/go-ethstorage

go 1.21

require (
	github.com/ethereum/go-ethereum v1.16.5
	github.com/urfave/cli v1.22.16
)

replace github.com/ethereum/go-ethereum => ./standin/go-ethereum

replace github.com/urfave/cli => ./standin/urfave-cli
