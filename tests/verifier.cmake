# The HLO verifier: unit test on built modules (no parser involved). Its
# bad-input goldens (bad_input/verify_*.hlo) are picked up by the glob in
# CMakeLists.txt.
ts_unit_test(test_verifier)
