"""`taskgate demo`: a one-minute tour of the whole loop on a private server (tour.py)."""
