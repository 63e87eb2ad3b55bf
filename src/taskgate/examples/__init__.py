"""Small programs that use taskgate from the outside, as a user's own would: run them, read them."""
