# Unit tests of common/ and the HLO IR builder and printer.
ts_unit_test(test_common)
ts_unit_test(test_printer)
