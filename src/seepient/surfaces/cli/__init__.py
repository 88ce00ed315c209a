"""surfaces/cli"""
