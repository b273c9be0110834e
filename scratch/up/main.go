package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/frontdoor-hpc/frontdoor/test/harness/slurm"
)

func main() {
	dir := os.Args[1]
	os.MkdirAll(dir, 0o755)
	s, err := slurm.Start(context.Background(), slurm.Options{Dir: dir})
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Println("UP", s.Conf())
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	<-ch
	fmt.Println("close:", s.Close())
}
