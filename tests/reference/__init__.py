"""Reference implementations written from papers, numpy/scipy only (no fesens import):
the tests compare fesens against them."""
