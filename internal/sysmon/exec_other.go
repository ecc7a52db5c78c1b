//go:build !unix

package sysmon

import "errors"

func execSelf([]string) error {
	return errors.New("sysmon: this system cannot start a program again in place")
}
