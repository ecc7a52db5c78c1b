variable "project_id" {
  description = "Google Cloud project."
  type        = string
}

variable "region" {
  description = "Region of the service and the Spanner instance."
  type        = string
  default     = "europe-west1"
}

variable "image" {
  description = "The sluice container image."
  type        = string
}

variable "access_keys" {
  description = "AKID:SECRET[,...] for SigV4."
  type        = string
  sensitive   = true
}

variable "maintenance_token" {
  description = "Maintenance bearer token (openssl rand -hex 32)."
  type        = string
  sensitive   = true
}

variable "processing_units" {
  description = "Spanner compute capacity (100 to 900 by 100, then multiples of 1000)."
  type        = number
  default     = 100
}
