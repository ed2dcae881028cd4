# SPDX-License-Identifier: GPL-2.0
# Sphinx configuration of the nvme-rdma-p2p documentation. Built with
# Debian's python3-sphinx, warnings as errors (make htmldocs).
project = "nvme-rdma-p2p"
copyright = "the nvme-rdma-p2p authors"
master_doc = "index"
exclude_patterns = ["output"]
# Kernel documentation style: plain reStructuredText, no extensions, so the
# stock Sphinx of Debian 12 (5.3) builds it.
extensions = []
html_theme = "alabaster"
highlight_language = "none"
