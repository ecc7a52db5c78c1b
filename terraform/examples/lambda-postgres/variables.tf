variable "region" {
  description = "AWS region."
  type        = string
  default     = "eu-west-1"
}

variable "lambda_zip" {
  description = "Path of sluice-lambda.zip (bootstrap for linux/arm64)."
  type        = string
  default     = "sluice-lambda.zip"
}

variable "access_keys" {
  description = "AKID:SECRET[,...] for SigV4."
  type        = string
  sensitive   = true
}

variable "db_password" {
  description = "Aurora master password (openssl rand -hex 24)."
  type        = string
  sensitive   = true
}
