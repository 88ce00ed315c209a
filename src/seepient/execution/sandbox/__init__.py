"""execution/sandbox"""
