module pora

go 1.19
