//go:build unix

package api

import (
	"io/fs"
	"syscall"
)

// inode is a file's inode number: a Secret volume's atomic swap of the
// file keeps its size and may keep its modification time.
func inode(fi fs.FileInfo) uint64 {
	if s, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(s.Ino)
	}
	return 0
}
